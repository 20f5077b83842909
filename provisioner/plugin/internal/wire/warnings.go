package wire

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// Warnings serves provisioner.WarningValidator; a provisioner without it has no warnings.
func (s *grpcServer) Warnings(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.WarningsResponse, err error) {
	defer guard("Warnings", &err)
	wv, ok := s.impl.(provisioner.WarningValidator)
	if !ok {
		return &pluginpb.WarningsResponse{}, nil
	}
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	warnings, err := wv.Warnings(ctx, req)
	if err != nil {
		return nil, errorToStatus(err)
	}
	out := &pluginpb.WarningsResponse{Warnings: make([]*pluginpb.Warning, len(warnings))}
	for i, w := range warnings {
		out.Warnings[i] = &pluginpb.Warning{Field: w.Field, Message: w.Message}
	}
	return out, nil
}

// Warnings calls the plugin's Warnings. A plugin built before the RPC existed answers
// Unimplemented: it has no warnings to give.
func (c *GRPCClient) Warnings(ctx context.Context, req *provisioner.Request) ([]provisioner.Warning, error) {
	in, err := requestToPB(req)
	if err != nil {
		return nil, provisioner.Internal(err)
	}
	out, err := c.rpc.Warnings(ctx, in)
	if status.Code(err) == codes.Unimplemented {
		return nil, nil
	}
	if err != nil {
		return nil, errorFromStatus("Warnings", err)
	}
	if len(out.GetWarnings()) == 0 {
		return nil, nil
	}
	warnings := make([]provisioner.Warning, len(out.GetWarnings()))
	for i, w := range out.GetWarnings() {
		warnings[i] = provisioner.Warning{Field: w.GetField(), Message: w.GetMessage()}
	}
	return warnings, nil
}
