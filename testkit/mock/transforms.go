package mock

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// runTransforms calls each transform callback of a registration the way
// the engine does for a remote component's child: through the SDK's
// callback server, with a TransformRequest, feeding each result to the next.
func runTransforms(callbacks []*pulumirpc.Callback, parentURN, typ, name string, props resource.PropertyMap) (Transformed, error) {
	out := Transformed{Props: props, Unchanged: true}
	for _, cb := range callbacks {
		conn, err := grpc.NewClient(cb.GetTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return out, err
		}
		defer conn.Close()
		args, err := plugin.MarshalProperties(out.Props, plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true})
		if err != nil {
			return out, err
		}
		req, err := proto.Marshal(&pulumirpc.TransformRequest{
			Type: typ, Name: name, Custom: true, Parent: parentURN, Properties: args,
			Options: &pulumirpc.TransformResourceOptions{Protect: proto.Bool(out.Protect)},
		})
		if err != nil {
			return out, err
		}
		resp, err := pulumirpc.NewCallbacksClient(conn).Invoke(context.Background(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: req})
		if err != nil {
			return out, err
		}
		var tr pulumirpc.TransformResponse
		if err := proto.Unmarshal(resp.GetResponse(), &tr); err != nil {
			return out, err
		}
		if tr.GetProperties() == nil && tr.GetOptions() == nil {
			continue // the transform left this child alone
		}
		out.Unchanged = false
		if out.Props, err = plugin.UnmarshalProperties(tr.GetProperties(), plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true}); err != nil {
			return out, err
		}
		out.Protect = tr.GetOptions().GetProtect()
		if ct := tr.GetOptions().GetCustomTimeouts(); ct != nil {
			out.CreateTimeout, out.UpdateTimeout = ct.GetCreate(), ct.GetUpdate()
		}
	}
	return out, nil
}
