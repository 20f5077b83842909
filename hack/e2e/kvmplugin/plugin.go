package main

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Resource is the extended resource the plugin advertises, as KubeVirt's does.
const Resource = "devices.kubevirt.io/kvm"

// containerPath is where the device appears in a container.
const containerPath = "/dev/kvm"

// plugin is the DevicePlugin service: n identical, always healthy devices.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices  []*pluginapi.Device
	ids      map[string]bool
	hostPath string
	// done ends every ListAndWatch stream when the plugin stops.
	done <-chan struct{}
}

func newPlugin(n int, hostPath string, done <-chan struct{}) *plugin {
	p := &plugin{hostPath: hostPath, done: done, ids: make(map[string]bool, n)}
	for i := range n {
		id := fmt.Sprintf("kvm-%d", i)
		p.devices = append(p.devices, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
		p.ids[id] = true
	}
	return p
}

// GetDevicePluginOptions: no PreStartContainer call, no preferred allocation.
func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the device list once; it never changes, so the stream then waits for
// the kubelet to hang up or the plugin to stop.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
	case <-p.done:
	}
	return nil
}

// Allocate gives each container the device node as /dev/kvm, whichever of the ids it got.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		if len(c.DevicesIds) == 0 {
			return nil, status.Error(codes.InvalidArgument, "a container request with no device ids")
		}
		for _, id := range c.DevicesIds {
			if !p.ids[id] {
				return nil, status.Errorf(codes.InvalidArgument, "unknown device %q", id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Devices: []*pluginapi.DeviceSpec{{ContainerPath: containerPath, HostPath: p.hostPath, Permissions: "rw"}},
		})
	}
	return resp, nil
}

// PreStartContainer is not asked for (see GetDevicePluginOptions); it succeeds anyway.
func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
