package host

import (
	"context"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

// ExternalPlugin is a Plugin whose process negotiated protocol version 2: a
// provisioner.ExternalProvisioner. A Go type cannot implement an interface only sometimes, so
// the host hands the registry this type for such plugins and the Plugin itself for the others
// (Plugin.Provisioner); the reconciler finds the capability with a type assertion.
type ExternalPlugin struct{ *Plugin }

var _ provisioner.ExternalProvisioner = ExternalPlugin{}

// Provisioner is what the registry serves for p: an ExternalPlugin when p's plugin
// negotiated protocol version 2, else p.
func (p *Plugin) Provisioner() provisioner.Provisioner {
	if p.Info().External {
		return ExternalPlugin{p}
	}
	return p
}

// CreateExternal calls the plugin's CreateExternal.
func (p ExternalPlugin) CreateExternal(ctx context.Context, req *provisioner.Request) (annotations map[string]string, err error) {
	err = p.call(ctx, "CreateExternal", func(ctx context.Context, c *wire.GRPCClient) error {
		annotations, err = c.CreateExternal(ctx, req)
		return err
	})
	return annotations, err
}

// ObserveExternal calls the plugin's ObserveExternal.
func (p ExternalPlugin) ObserveExternal(ctx context.Context, req *provisioner.Request) (st provisioner.ExternalState, err error) {
	err = p.call(ctx, "ObserveExternal", func(ctx context.Context, c *wire.GRPCClient) error {
		st, err = c.ObserveExternal(ctx, req)
		return err
	})
	return st, err
}

// InventoryExternal calls the plugin's InventoryExternal.
func (p ExternalPlugin) InventoryExternal(ctx context.Context, req *provisioner.Request) (list []provisioner.ExternalResource, err error) {
	err = p.call(ctx, "InventoryExternal", func(ctx context.Context, c *wire.GRPCClient) error {
		list, err = c.InventoryExternal(ctx, req)
		return err
	})
	return list, err
}
