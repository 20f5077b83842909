// Package testprov is a small provisioner for the plugin tests and benchmarks, realistic enough
// to measure (it parses parameters and renders an exporter-and-target Pod like
// examples/container-provisioner) and with switches to misbehave: hang, crash, log, fail.
package testprov

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Name is the provisioner name served by default.
const Name = "test.example.dev"

// Provisioner serves Names (default Name). Parameters:
//
//	image:  the target image (default busybox)
//	memory: a quantity for the target's requests
//	sleep:  a duration RenderPod waits, giving up when its context ends
//	marker: a file RenderPod creates when called, before sleeping, so a test knows it is inside
//	log:    a message RenderPod logs with the standard log package
//	stderr: a line RenderPod writes to os.Stderr
//	fail:   "invalid", "transient" or "internal": RenderPod fails so
type Provisioner struct {
	// Names are the names served; nil means Name.
	Names []string
	// NoNames makes Describe return no names.
	NoNames bool
	// HangDescribe and HangRenderPod block those calls for good, ignoring their context.
	HangDescribe, HangRenderPod bool
	// ExitInRenderPod ends the process in RenderPod: a crash in the middle of a call.
	ExitInRenderPod bool
}

type params struct {
	Image  string `json:"image"`
	Memory string `json:"memory"`
	Sleep  string `json:"sleep"`
	Marker string `json:"marker"`
	Log    string `json:"log"`
	Stderr string `json:"stderr"`
	Fail   string `json:"fail"`
	Warn   string `json:"warn"`
}

// Describe returns the names and a default exporter image.
func (p Provisioner) Describe(context.Context) (provisioner.Description, error) {
	if p.HangDescribe {
		select {}
	}
	names := p.Names
	if names == nil {
		names = []string{Name}
	}
	if p.NoNames {
		names = nil
	}
	return provisioner.Description{
		Names:         names,
		Version:       "1.2.3",
		DefaultImages: provisioner.Images{Exporter: provisioner.Image{Image: "quay.io/jumpstarter-dev/jumpstarter:latest", PullPolicy: corev1.PullIfNotPresent}},
	}, nil
}

// Warnings returns one warning at parameters.warn when that parameter is set: what a
// provisioner.WarningValidator gives across the plugin protocol.
func (Provisioner) Warnings(_ context.Context, req *provisioner.Request) ([]provisioner.Warning, error) {
	prm, _ := parse(req)
	if prm.Warn == "" {
		return nil, nil
	}
	return []provisioner.Warning{{Field: "parameters.warn", Message: prm.Warn}}, nil
}

func parse(req *provisioner.Request) (params, field.ErrorList) {
	var out params
	root := field.NewPath("parameters")
	if len(req.Parameters) > 0 {
		if err := json.Unmarshal(req.Parameters, &out); err != nil {
			return out, field.ErrorList{field.Invalid(root, string(req.Parameters), err.Error())}
		}
	}
	var errs field.ErrorList
	if out.Memory != "" {
		if _, err := resource.ParseQuantity(out.Memory); err != nil {
			errs = append(errs, field.Invalid(root.Child("memory"), out.Memory, "must be a quantity"))
		}
	}
	if out.Sleep != "" {
		if _, err := time.ParseDuration(out.Sleep); err != nil {
			errs = append(errs, field.Invalid(root.Child("sleep"), out.Sleep, "must be a duration"))
		}
	}
	switch out.Fail {
	case "", "invalid", "transient", "internal":
	default:
		errs = append(errs, field.NotSupported(root.Child("fail"), out.Fail, []string{"invalid", "transient", "internal"}))
	}
	return out, errs
}

// Validate checks the parameters.
func (Provisioner) Validate(_ context.Context, req *provisioner.Request) error {
	_, errs := parse(req)
	return provisioner.InvalidFields(errs)
}

// RenderPod renders an exporter and a target container, after misbehaving as asked.
func (p Provisioner) RenderPod(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	prm, errs := parse(req)
	if len(errs) > 0 {
		return nil, provisioner.InvalidFields(errs)
	}
	if prm.Marker != "" {
		if err := os.WriteFile(prm.Marker, []byte(fmt.Sprint(os.Getpid())), 0o600); err != nil {
			return nil, provisioner.Internal(err)
		}
	}
	if prm.Log != "" {
		log.Printf("%s", prm.Log)
	}
	if prm.Stderr != "" {
		fmt.Fprintln(os.Stderr, prm.Stderr)
	}
	if p.ExitInRenderPod {
		os.Exit(2)
	}
	if p.HangRenderPod {
		select {}
	}
	if prm.Sleep != "" {
		d, _ := time.ParseDuration(prm.Sleep)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch prm.Fail {
	case "invalid":
		return nil, provisioner.InvalidFields(field.ErrorList{field.Invalid(field.NewPath("parameters", "fail"), prm.Fail, "asked to fail")})
	case "transient":
		return nil, provisioner.Transient(errors.New("asked to fail, transiently"))
	case "internal":
		return nil, provisioner.Errorf("asked to fail")
	}
	image := prm.Image
	if image == "" {
		image = "busybox:1.36"
	}
	target := corev1.Container{Name: "target", Image: image, Command: []string{"sleep", "infinity"}}
	if prm.Memory != "" {
		target.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(prm.Memory)}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{target}}}
	provisioner.AddExporterContainer(pod, req)
	return pod, nil
}

// EnrichDrivers returns the template's drivers.
func (Provisioner) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	return provisioner.TemplateDrivers(req), nil
}

// Cleanup succeeds.
func (Provisioner) Cleanup(context.Context, *provisioner.Request) error { return nil }
