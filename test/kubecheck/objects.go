package kubecheck

import (
	"encoding/json"
	"fmt"

	"nodeless-eks/nodepool/spec"
	"nodeless-eks/testkit/badpools"
)

// ObjectsFor builds the EC2NodeClasses and NodePools a pool configuration
// would produce, with the same defaults as the program, skipping its
// validation: what the API server would be sent were config validation not
// there.
func ObjectsFor(row badpools.Row) (map[string]spec.Pool, map[string]spec.NodeClass, []map[string]any, error) {
	var pools map[string]spec.Pool
	if row.NodePools != nil {
		if err := json.Unmarshal(row.NodePools, &pools); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: nodePools: %w", row.Name, err)
		}
	}
	var classes map[string]spec.NodeClass
	if row.NodeClasses != nil {
		if err := json.Unmarshal(row.NodeClasses, &classes); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: nodeClasses: %w", row.Name, err)
		}
	}
	pools, classes = spec.Resolve(pools, classes)
	var objects []map[string]any
	for name, c := range classes {
		objects = append(objects, spec.EC2NodeClass(name, c, spec.Nodes{
			ClusterName: "eks-demo", NodeRoleName: "eks-demo-karpenter-node",
			SubnetIDs: []string{"subnet-0a1b2c3d"}, SecurityGroupIDs: []string{"sg-0a1b2c3d"},
		}))
	}
	for name, p := range pools {
		objects = append(objects, spec.NodePool(name, p))
	}
	return pools, classes, objects, nil
}
