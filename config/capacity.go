package config

import (
	"nodeless-eks/nodepool/spec"
	"nodeless-eks/versions"
)

// checkCoreDNSReplicas: enough CoreDNS for the stack class.
func (c *Config) checkCoreDNSReplicas(p *problems) {
	switch {
	case c.CoreDNSReplicas < 1 || c.CoreDNSReplicas > 10:
		p.add("corednsReplicas %d: want 1-10", c.CoreDNSReplicas)
	case c.Production && c.CoreDNSReplicas < 2:
		p.add("corednsReplicas %d: production stacks run at least 2, spread over nodes", c.CoreDNSReplicas)
	}
}

// checkControllerResources: a Fargate size the controller fits and pays
// for in full.
func (c *Config) checkControllerResources(p *problems) {
	if r := c.ControllerResources; r.CPU == "" || r.Memory == "" {
		p.add("controllerResources: set both cpu and memory, or neither for the stack class's size")
	} else if err := r.Validate(); err != nil {
		p.add("controllerResources: %v", err)
	}
}

// checkNodePools: a pool set something can be scheduled on.
func (c *Config) checkNodePools(p *problems) {
	p.addErr(spec.Validate(c.NodePools, c.NodeClasses, c.Production, versions.KarpenterMinor(c.KarpenterVersion)))
}
