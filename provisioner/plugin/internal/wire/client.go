package wire

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// GRPCClient is a provisioner.Provisioner that calls a plugin over one gRPC connection. It does
// not manage the plugin process: the host wraps it with start, restart and deadlines.
type GRPCClient struct {
	rpc  pluginpb.ProvisionerClient
	ext  pluginpb.ExternalProvisionerClient // protocol version 2; nil on version 1
	done <-chan struct{}
}

var _ provisioner.Provisioner = (*GRPCClient)(nil)

// NewGRPCClient returns a client on conn.
func NewGRPCClient(conn grpc.ClientConnInterface) *GRPCClient {
	return &GRPCClient{rpc: pluginpb.NewProvisionerClient(conn)}
}

// Done is closed when go-plugin sees the plugin process exit; nil (never closed) for a client
// made by NewGRPCClient. The host uses it to notice a crash at once, not at the next call.
func (c *GRPCClient) Done() <-chan struct{} { return c.done }

// Info is what Describe returns plus what the host logs about a plugin.
type Info struct {
	provisioner.Description
	// ProtocolVersion is the protocol version the plugin says it implements.
	ProtocolVersion int
	// SDKVersion is the version of github.com/exporterset/exporterset the plugin was built with.
	SDKVersion string
	// External is true when the plugin negotiated protocol version 2: its provisioner is a
	// provisioner.ExternalProvisioner.
	External bool
}

// Info calls Describe and returns everything it answered.
func (c *GRPCClient) Info(ctx context.Context) (Info, error) {
	out, err := c.rpc.Describe(ctx, &pluginpb.DescribeRequest{})
	if err != nil {
		return Info{}, errorFromStatus("Describe", err)
	}
	return Info{
		Description: provisioner.Description{
			Names:           out.GetNames(),
			Version:         out.GetVersion(),
			DefaultImages:   imagesFromPB(out.GetDefaultImages()),
			ParameterSchema: out.GetParameterSchema(),
		},
		ProtocolVersion: int(out.GetProtocolVersion()),
		SDKVersion:      out.GetSdkVersion(),
		External:        c.ext != nil,
	}, nil
}

// Describe calls the plugin's Describe.
func (c *GRPCClient) Describe(ctx context.Context) (provisioner.Description, error) {
	info, err := c.Info(ctx)
	return info.Description, err
}

// Validate calls the plugin's Validate.
func (c *GRPCClient) Validate(ctx context.Context, req *provisioner.Request) error {
	in, err := requestToPB(req)
	if err != nil {
		return provisioner.Internal(err)
	}
	if _, err := c.rpc.Validate(ctx, in); err != nil {
		return errorFromStatus("Validate", err)
	}
	return nil
}

// RenderPod calls the plugin's RenderPod.
func (c *GRPCClient) RenderPod(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	in, err := requestToPB(req)
	if err != nil {
		return nil, provisioner.Internal(err)
	}
	out, err := c.rpc.RenderPod(ctx, in)
	if err != nil {
		return nil, errorFromStatus("RenderPod", err)
	}
	pod, err := unmarshalObject[corev1.Pod](out.GetPod(), "the Pod the plugin rendered")
	if err != nil {
		return nil, provisioner.Internal(err)
	}
	return pod, nil
}

// EnrichDrivers calls the plugin's EnrichDrivers.
func (c *GRPCClient) EnrichDrivers(ctx context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	in, err := requestToPB(req)
	if err != nil {
		return nil, provisioner.Internal(err)
	}
	out, err := c.rpc.EnrichDrivers(ctx, in)
	if err != nil {
		return nil, errorFromStatus("EnrichDrivers", err)
	}
	var drivers []vtv1alpha1.DriverSpec
	if b := out.GetDrivers(); len(b) > 0 {
		if err := json.Unmarshal(b, &drivers); err != nil {
			return nil, provisioner.Errorf("decoding the drivers the plugin returned: %w", err)
		}
	}
	return drivers, nil
}

// Cleanup calls the plugin's Cleanup.
func (c *GRPCClient) Cleanup(ctx context.Context, req *provisioner.Request) error {
	in, err := requestToPB(req)
	if err != nil {
		return provisioner.Internal(err)
	}
	if _, err := c.rpc.Cleanup(ctx, in); err != nil {
		return errorFromStatus("Cleanup", err)
	}
	return nil
}
