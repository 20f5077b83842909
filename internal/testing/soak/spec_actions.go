package soak

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The walk's edits of set and class specs: valid changes (some start rolls), invalid
// parameters for a while, a class deleted and re-created.

// editSet changes one thing of a set's spec, keeping it valid (the API server refuses
// minReplicas or minAvailableReplicas above a non-zero maxReplicas).
func (wk *Walk) editSet(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	var what string
	choice := wk.rng.Intn(10)
	wk.rev++
	rev := wk.rev
	maxR := int32(1 + wk.rng.Intn(6))
	if wk.rng.Intn(8) == 0 {
		maxR = 0 // unbounded, now and then
	}
	minR, minAvail := int32(wk.rng.Intn(4)), int32(wk.rng.Intn(4))
	cooldown := time.Duration(wk.rng.Intn(3)) * time.Second
	extraDriver := wk.rng.Intn(2) == 0
	if p.shape != "" && choice < 7 {
		choice = 7 + choice%3 // a kept shape: its cooldown or template, not its sizing
	}
	start := time.Now()
	err := wk.updateSet(ctx, p.set, func(s *vtv1alpha1.ExporterSet) {
		switch {
		case choice < 3:
			s.Spec.MaxReplicas = ptr.To(maxR)
			what = fmt.Sprintf("maxReplicas=%d", maxR)
		case choice < 5:
			s.Spec.MinReplicas = minR
			what = fmt.Sprintf("minReplicas=%d", minR)
		case choice < 7:
			s.Spec.MinAvailableReplicas = minAvail
			what = fmt.Sprintf("minAvailableReplicas=%d", minAvail)
		case choice < 8:
			s.Spec.ScaleDownCooldown = &metav1.Duration{Duration: cooldown}
			what = fmt.Sprintf("scaleDownCooldown=%s", cooldown)
		default:
			// A template change rolls the idle instances.
			if s.Spec.Template.Metadata.Annotations == nil {
				s.Spec.Template.Metadata.Annotations = map[string]string{}
			}
			s.Spec.Template.Metadata.Annotations["soak/revision"] = fmt.Sprint(rev)
			drivers := []vtv1alpha1.DriverSpec{{Name: "power", Type: "jumpstarter_driver_power.driver.MockPower"}}
			if extraDriver {
				drivers = append(drivers, vtv1alpha1.DriverSpec{Name: "serial", Type: "jumpstarter_driver_pyserial.driver.PySerial"})
			}
			s.Spec.Template.Spec.Drivers = drivers
			what = fmt.Sprintf("template revision %d (%d drivers)", rev, len(drivers))
		}
		if m := ptr.Deref(s.Spec.MaxReplicas, 0); m > 0 {
			s.Spec.MinReplicas = min(s.Spec.MinReplicas, m)
			s.Spec.MinAvailableReplicas = min(s.Spec.MinAvailableReplicas, m)
		}
		what += fmt.Sprintf(" -> min %d max %d minAvailable %d", s.Spec.MinReplicas, ptr.Deref(s.Spec.MaxReplicas, 0), s.Spec.MinAvailableReplicas)
	})
	if err == nil && choice >= 8 {
		wk.rolledSet(ctx, p.set, RollByTemplate, start)
	}
	return p.set + ": " + what, false, err
}

func (wk *Walk) updateSet(ctx context.Context, name string, mutate func(*vtv1alpha1.ExporterSet)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var s vtv1alpha1.ExporterSet
		if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: name}, &s); err != nil {
			return err
		}
		mutate(&s)
		return wk.w.c.Update(ctx, &s)
	})
}

func (wk *Walk) updateClass(ctx context.Context, name string, mutate func(*vtv1alpha1.VirtualTargetClass)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var c vtv1alpha1.VirtualTargetClass
		if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: name}, &c); err != nil {
			return err
		}
		mutate(&c)
		return wk.w.c.Update(ctx, &c)
	})
}

// pickClass draws a class that exists (not deleted by the walk).
func (wk *Walk) pickClass() *pool {
	var names []string
	for _, p := range wk.w.pools {
		if wk.deleted[p.class] == nil {
			names = append(names, p.class)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return wk.w.poolOfClass(wk.pickName(names))
}

// editClass changes a class's parameters (which rolls its sets' idle instances) or its
// binding mode.
func (wk *Walk) editClass(ctx context.Context) (string, bool, error) {
	p := wk.pickClass()
	if p == nil {
		return "", true, nil
	}
	wk.rev++
	rev := wk.rev
	toggleBinding := wk.rng.Intn(3) == 0 && p.shape == "" // a kept shape keeps its binding
	var what string
	start := time.Now()
	err := wk.updateClass(ctx, p.class, func(c *vtv1alpha1.VirtualTargetClass) {
		if toggleBinding {
			if c.Spec.BindingMode == vtv1alpha1.BindingWaitForFirstConsumer {
				c.Spec.BindingMode = vtv1alpha1.BindingImmediate
			} else {
				c.Spec.BindingMode = vtv1alpha1.BindingWaitForFirstConsumer
			}
			what = fmt.Sprintf("%s: bindingMode=%s", p.class, c.Spec.BindingMode)
			return
		}
		c.Spec.Parameters = classParameters(p, rev)
		what = fmt.Sprintf("%s: parameters revision %d", p.class, rev)
	})
	if err == nil && !toggleBinding { // the binding mode is not part of the spec hash
		wk.rolled(p.set, RollByClass, start, 0)
	}
	if apierrors.IsNotFound(err) {
		return "", true, nil
	}
	return what, false, err
}

// breakClass gives a class parameters its provisioner refuses, for a few seconds: the set is
// blocked (InvalidParameters) and must neither create nor delete meanwhile.
func (wk *Walk) breakClass(ctx context.Context) (string, bool, error) {
	p := wk.pickClass()
	if p == nil {
		return "", true, nil
	}
	var invalid []byte
	if p.provisioner == PluginProvisioner {
		invalid = []byte(`{"image":"registry.example/soak-target:1","unknownKey":true}`)
	} else {
		invalid = []byte(`{"invalid":"soak: refused on purpose"}`)
	}
	if wk.broken[p.class] {
		return "", true, nil // its restore is pending: a second break would restore to broken
	}
	err := wk.updateClass(ctx, p.class, func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: invalid}
	})
	if apierrors.IsNotFound(err) {
		return "", true, nil
	}
	if err != nil {
		return "", false, err
	}
	wk.broken[p.class] = true
	d := time.Duration(2+wk.rng.Intn(4)) * time.Second
	wk.w.checker.Excuse(p.set, d+excuseSlack)
	wk.later(d, "restore parameters of class "+p.class, func(ctx context.Context) error {
		err := wk.updateClass(ctx, p.class, func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Parameters = classParameters(p, wk.rev) })
		if err != nil && !apierrors.IsNotFound(err) { // deleted meanwhile: it is re-created valid
			return err
		}
		delete(wk.broken, p.class)
		return nil
	})
	return fmt.Sprintf("%s: invalid parameters for %s", p.class, d), false, nil
}

// deleteClass deletes a class and re-creates it (same spec, new UID) a few seconds later.
func (wk *Walk) deleteClass(ctx context.Context) (string, bool, error) {
	p := wk.pickClass()
	if p == nil {
		return "", true, nil
	}
	var c vtv1alpha1.VirtualTargetClass
	if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: p.class}, &c); err != nil {
		return "", false, err
	}
	if err := wk.w.c.Delete(ctx, &c); err != nil {
		return "", false, err
	}
	recreate := &vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels}, Spec: c.Spec}
	if wk.broken[p.class] {
		recreate.Spec.Parameters = classParameters(p, wk.rev) // a class deleted while broken comes back valid
	}
	wk.deleted[p.class] = recreate
	d := time.Duration(1+wk.rng.Intn(5)) * time.Second
	wk.w.checker.Excuse(p.set, d+excuseSlack)
	wk.later(d, "re-create class "+p.class, func(ctx context.Context) error {
		err := wk.w.c.Create(ctx, recreate.DeepCopy())
		if err == nil || apierrors.IsAlreadyExists(err) {
			delete(wk.deleted, p.class)
			return nil
		}
		return err
	})
	return fmt.Sprintf("%s, re-created in %s", p.class, d), false, nil
}
