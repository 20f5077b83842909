package wire

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// grpcPlugin is the go-plugin plugin of protocol v1: on the plugin side it registers Impl as
// the pluginpb.Provisioner service, on the host side it dispenses a *GRPCClient.
type grpcPlugin struct {
	// NetRPCUnsupportedPlugin refuses net/rpc; the protocol is gRPC only.
	goplugin.NetRPCUnsupportedPlugin
	// Impl is the served provisioner; nil on the host side.
	Impl provisioner.Provisioner
	// external is protocol version 2: the ExternalProvisioner service too.
	external bool
}

var _ goplugin.GRPCPlugin = (*grpcPlugin)(nil)

// GRPCServer registers Impl on s.
func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginpb.RegisterProvisionerServer(s, NewGRPCServer(p.Impl))
	if ext, ok := p.Impl.(provisioner.ExternalProvisioner); ok && p.external {
		pluginpb.RegisterExternalProvisionerServer(s, &externalServer{impl: ext})
	}
	return nil
}

// GRPCClient returns a *GRPCClient on conn whose Done is ctx's, which go-plugin cancels when
// the plugin process exits.
func (p *grpcPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	c := NewGRPCClient(conn)
	c.done = ctx.Done()
	if p.external {
		c.ext = pluginpb.NewExternalProvisionerClient(conn)
	}
	return c, nil
}
