package wire

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
)

// Kubernetes objects cross the wire as the JSON of their API types, the encoding they already
// have, so the protocol never mirrors their schemas. An absent object is an empty field.

func marshalObject(v any, isNil bool) ([]byte, error) {
	if isNil {
		return nil, nil
	}
	return json.Marshal(v)
}

func unmarshalObject[T any](b []byte, what string) (*T, error) {
	if len(b) == 0 {
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", what, err)
	}
	return v, nil
}

func requestToPB(req *provisioner.Request) (*pluginpb.Request, error) {
	if req == nil {
		return &pluginpb.Request{}, nil
	}
	set, err := marshalObject(req.Set, req.Set == nil)
	if err != nil {
		return nil, fmt.Errorf("encoding the ExporterSet: %w", err)
	}
	class, err := marshalObject(req.Class, req.Class == nil)
	if err != nil {
		return nil, fmt.Errorf("encoding the VirtualTargetClass: %w", err)
	}
	exp, err := marshalObject(req.Exporter, req.Exporter == nil)
	if err != nil {
		return nil, fmt.Errorf("encoding the Exporter: %w", err)
	}
	return &pluginpb.Request{
		Set:              set,
		Class:            class,
		Parameters:       req.Parameters,
		Images:           imagesToPB(req.Images),
		Exporter:         exp,
		ConfigSecretName: req.ConfigSecretName,
		Credentials:      req.Credentials,
	}, nil
}

func requestFromPB(in *pluginpb.Request) (*provisioner.Request, error) {
	set, err := unmarshalObject[vtv1alpha1.ExporterSet](in.GetSet(), "the ExporterSet")
	if err != nil {
		return nil, err
	}
	class, err := unmarshalObject[vtv1alpha1.VirtualTargetClass](in.GetClass(), "the VirtualTargetClass")
	if err != nil {
		return nil, err
	}
	exp, err := unmarshalObject[jumpstarterv1alpha1.Exporter](in.GetExporter(), "the Exporter")
	if err != nil {
		return nil, err
	}
	req := &provisioner.Request{
		Set:              set,
		Class:            class,
		Images:           imagesFromPB(in.GetImages()),
		Exporter:         exp,
		ConfigSecretName: in.GetConfigSecretName(),
		Credentials:      in.GetCredentials(),
	}
	if len(in.GetParameters()) > 0 {
		req.Parameters = json.RawMessage(in.GetParameters())
	}
	return req, nil
}

func imagesToPB(in provisioner.Images) *pluginpb.Images {
	return &pluginpb.Images{
		Exporter: &pluginpb.Image{Image: in.Exporter.Image, PullPolicy: string(in.Exporter.PullPolicy)},
		Runtime:  &pluginpb.Image{Image: in.Runtime.Image, PullPolicy: string(in.Runtime.PullPolicy)},
	}
}

func imagesFromPB(in *pluginpb.Images) provisioner.Images {
	return provisioner.Images{
		Exporter: provisioner.Image{Image: in.GetExporter().GetImage(), PullPolicy: corev1.PullPolicy(in.GetExporter().GetPullPolicy())},
		Runtime:  provisioner.Image{Image: in.GetRuntime().GetImage(), PullPolicy: corev1.PullPolicy(in.GetRuntime().GetPullPolicy())},
	}
}
