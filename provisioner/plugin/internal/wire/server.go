package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// modulePath is this module; a plugin reports the version of it that it was built with.
const modulePath = "github.com/exporterset/exporterset"

// grpcServer serves a provisioner.Provisioner as the pluginpb.Provisioner service.
type grpcServer struct {
	pluginpb.UnimplementedProvisionerServer
	impl provisioner.Provisioner
}

// NewGRPCServer returns the pluginpb.Provisioner service of impl. Serve uses it; it is exported
// for tests that serve a provisioner on their own gRPC server.
func NewGRPCServer(impl provisioner.Provisioner) pluginpb.ProvisionerServer {
	return &grpcServer{impl: impl}
}

// guard turns a panic of the provisioner into an internal error, so that one bad request does
// not kill the plugin process and every call in flight with it.
func guard(method string, err *error) {
	if r := recover(); r != nil {
		fmt.Fprintf(os.Stderr, "panic in provisioner %s: %v\n%s", method, r, debug.Stack())
		*err = errorToStatus(provisioner.Errorf("provisioner panicked in %s: %v", method, r))
	}
}

func (s *grpcServer) Describe(ctx context.Context, _ *pluginpb.DescribeRequest) (_ *pluginpb.DescribeResponse, err error) {
	defer guard("Describe", &err)
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.DescribeResponse{
		Names:           d.Names,
		Version:         d.Version,
		ProtocolVersion: uint32(protocolOf(s.impl)),
		DefaultImages:   imagesToPB(d.DefaultImages),
		ParameterSchema: d.ParameterSchema,
		SdkVersion:      sdkVersion(),
	}, nil
}

func (s *grpcServer) Validate(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.ValidateResponse, err error) {
	defer guard("Validate", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	if err := s.impl.Validate(ctx, req); err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.ValidateResponse{}, nil
}

func (s *grpcServer) RenderPod(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.RenderPodResponse, err error) {
	defer guard("RenderPod", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	pod, err := s.impl.RenderPod(ctx, req)
	if err != nil {
		return nil, errorToStatus(err)
	}
	out := &pluginpb.RenderPodResponse{}
	if pod != nil {
		if out.Pod, err = json.Marshal(pod); err != nil {
			return nil, errorToStatus(provisioner.Errorf("encoding the Pod: %w", err))
		}
	}
	return out, nil
}

func (s *grpcServer) EnrichDrivers(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.EnrichDriversResponse, err error) {
	defer guard("EnrichDrivers", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	drivers, err := s.impl.EnrichDrivers(ctx, req)
	if err != nil {
		return nil, errorToStatus(err)
	}
	b, err := json.Marshal(drivers)
	if err != nil {
		return nil, errorToStatus(provisioner.Errorf("encoding the drivers: %w", err))
	}
	return &pluginpb.EnrichDriversResponse{Drivers: b}, nil
}

func (s *grpcServer) Cleanup(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.CleanupResponse, err error) {
	defer guard("Cleanup", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	if err := s.impl.Cleanup(ctx, req); err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.CleanupResponse{}, nil
}

// sdkVersion is the version of this module compiled into the running binary.
func sdkVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == modulePath {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}
