package wire

import (
	"context"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// externalServer serves a provisioner.ExternalProvisioner as the pluginpb.ExternalProvisioner
// service (protocol version 2).
type externalServer struct {
	pluginpb.UnimplementedExternalProvisionerServer
	impl provisioner.ExternalProvisioner
}

func (s *externalServer) CreateExternal(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.CreateExternalResponse, err error) {
	defer guard("CreateExternal", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	annotations, err := s.impl.CreateExternal(ctx, req)
	if err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.CreateExternalResponse{Annotations: annotations}, nil
}

func (s *externalServer) ObserveExternal(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.ObserveExternalResponse, err error) {
	defer guard("ObserveExternal", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	st, err := s.impl.ObserveExternal(ctx, req)
	if err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.ObserveExternalResponse{Phase: string(st.Phase), Reason: st.Reason, Message: st.Message}, nil
}

func (s *externalServer) InventoryExternal(ctx context.Context, in *pluginpb.Request) (_ *pluginpb.InventoryExternalResponse, err error) {
	defer guard("InventoryExternal", &err)
	req, err := requestFromPB(in)
	if err != nil {
		return nil, errorToStatus(provisioner.Internal(err))
	}
	list, err := s.impl.InventoryExternal(ctx, req)
	if err != nil {
		return nil, errorToStatus(err)
	}
	out := &pluginpb.InventoryExternalResponse{}
	for _, r := range list {
		out.Resources = append(out.Resources, &pluginpb.ExternalResource{
			Instance: r.Instance, InstanceUid: r.InstanceUID, Kind: r.Kind, Name: r.Name, Annotations: r.Annotations})
	}
	return out, nil
}

// External reports whether the plugin negotiated protocol version 2 (it serves the
// ExternalProvisioner service).
func (c *GRPCClient) External() bool { return c.ext != nil }

// errNotExternal is the answer of the external calls on a version-1 plugin: the host never
// makes them (it offers the ExternalProvisioner interface only for version 2).
func errNotExternal(method string) error {
	return provisioner.Errorf("%s: the plugin serves protocol version 1, which has no external instances", method)
}

// CreateExternal calls the plugin's CreateExternal.
func (c *GRPCClient) CreateExternal(ctx context.Context, req *provisioner.Request) (map[string]string, error) {
	if c.ext == nil {
		return nil, errNotExternal("CreateExternal")
	}
	in, err := requestToPB(req)
	if err != nil {
		return nil, provisioner.Internal(err)
	}
	out, err := c.ext.CreateExternal(ctx, in)
	if err != nil {
		return nil, errorFromStatus("CreateExternal", err)
	}
	return out.GetAnnotations(), nil
}

// ObserveExternal calls the plugin's ObserveExternal.
func (c *GRPCClient) ObserveExternal(ctx context.Context, req *provisioner.Request) (provisioner.ExternalState, error) {
	if c.ext == nil {
		return provisioner.ExternalState{}, errNotExternal("ObserveExternal")
	}
	in, err := requestToPB(req)
	if err != nil {
		return provisioner.ExternalState{}, provisioner.Internal(err)
	}
	out, err := c.ext.ObserveExternal(ctx, in)
	if err != nil {
		return provisioner.ExternalState{}, errorFromStatus("ObserveExternal", err)
	}
	return provisioner.ExternalState{Phase: provisioner.ExternalPhase(out.GetPhase()), Reason: out.GetReason(), Message: out.GetMessage()}, nil
}

// InventoryExternal calls the plugin's InventoryExternal.
func (c *GRPCClient) InventoryExternal(ctx context.Context, req *provisioner.Request) ([]provisioner.ExternalResource, error) {
	if c.ext == nil {
		return nil, errNotExternal("InventoryExternal")
	}
	in, err := requestToPB(req)
	if err != nil {
		return nil, provisioner.Internal(err)
	}
	out, err := c.ext.InventoryExternal(ctx, in)
	if err != nil {
		return nil, errorFromStatus("InventoryExternal", err)
	}
	var list []provisioner.ExternalResource
	for _, r := range out.GetResources() {
		list = append(list, provisioner.ExternalResource{
			Instance: r.GetInstance(), InstanceUID: r.GetInstanceUid(), Kind: r.GetKind(), Name: r.GetName(), Annotations: r.GetAnnotations()})
	}
	return list, nil
}
