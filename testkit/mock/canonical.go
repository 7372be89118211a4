package mock

import (
	"encoding/json"
	"sort"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Canonical is the registration as the engine received it, as JSON with
// sorted keys, without what changes from run to run or with the source
// layout (source positions, stack traces, callback addresses) and with
// dependency lists sorted. Transforms are kept as their count and, under
// "transformed", what they make of the representative children. Two runs
// that register the same thing give the same bytes; golden tests hash them.
func (reg *Registration) Canonical() json.RawMessage {
	c := proto.Clone(reg.RPC).(*pulumirpc.RegisterResourceRequest)
	c.SourcePosition, c.StackTrace, c.ParentStackTraceHandle = nil, nil, ""
	transforms := len(c.Transforms)
	c.Transforms = nil
	sort.Strings(c.Dependencies)
	for _, d := range c.PropertyDependencies {
		sort.Strings(d.Urns)
	}
	raw, err := protojson.Marshal(c)
	if err != nil {
		panic(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	v["transformCount"] = transforms
	if reg.Transformed != nil {
		m := map[string]any{}
		for typ, tr := range reg.Transformed {
			entry := map[string]any{"props": tr.Props.Mappable(), "protect": tr.Protect, "unchanged": tr.Unchanged}
			if tr.CreateTimeout != "" || tr.UpdateTimeout != "" {
				entry["customTimeouts"] = map[string]any{"create": tr.CreateTimeout, "update": tr.UpdateTimeout}
			}
			m[typ] = entry
		}
		v["transformed"] = m
	}
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return out
}
