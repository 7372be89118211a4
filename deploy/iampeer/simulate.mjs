// Runs IAM authorization cases through @cloud-copilot/iam-simulate, an
// evaluator nobody in this repository wrote. Input on stdin: [{"name",
// "principal", "action", "resource", "account", "context": {...},
// "identityPolicies": [{name, policy}], "boundaries": [{name, policy}]}].
// Output on stdout: [{"name", "result"}], result being Allowed,
// ImplicitlyDenied or ExplicitlyDenied, or "error: ..." when the simulator
// refused the case.
import { runSimulation } from '@cloud-copilot/iam-simulate';

const input = JSON.parse(await new Promise((resolve) => {
  let s = '';
  process.stdin.on('data', (d) => (s += d));
  process.stdin.on('end', () => resolve(s));
}));
const out = [];
for (const c of input) {
  const r = await runSimulation({
    request: { principal: c.principal, action: c.action, resource: { resource: c.resource, accountId: c.account }, contextVariables: c.context ?? {} },
    identityPolicies: c.identityPolicies,
    permissionBoundaryPolicies: c.boundaries?.length ? c.boundaries : undefined,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
  }, {});
  out.push({ name: c.name, result: r.resultType === 'error' ? 'error: ' + JSON.stringify(r.errors) : r.overallResult });
}
console.log(JSON.stringify(out));
