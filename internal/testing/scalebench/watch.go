package scalebench

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchEach lists the objects of list's kind in ns and then watches them, calling fn for
// every listed object (as watch.Added) and every later event, until fn returns true or ctx
// ends. A watch the apiserver closes is resumed from the last resourceVersion (re-listing
// when that is too old). One watch instead of polling keeps the benchmark's own load off
// the apiserver it measures.
func watchEach(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string, fn func(watch.EventType, client.Object) bool) error {
	return watchEachFrom(ctx, c, list, ns, nil, fn)
}

// watchEachFrom is watchEach that reports on listed (when not nil) once its first list is
// done, or failed: a caller that creates objects after that misses none of their events.
func watchEachFrom(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string, listed chan<- error, fn func(watch.EventType, client.Object) bool) error {
	tell := func(err error) {
		if listed != nil {
			listed <- err
			listed = nil
		}
	}
	rv := ""
	for {
		if rv == "" {
			l := list.DeepCopyObject().(client.ObjectList)
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				tell(err)
				return err
			}
			items, err := apimeta.ExtractList(l)
			if err != nil {
				return err
			}
			for _, it := range items {
				if fn(watch.Added, it.(client.Object)) {
					return nil
				}
			}
			rv = l.GetResourceVersion()
			tell(nil)
		}
		w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			return err
		}
		done, next, err := drain(ctx, w, fn)
		w.Stop()
		if done || err != nil {
			return err
		}
		rv = next
	}
}

// drain reads w until fn is satisfied, ctx ends or the watch closes; it returns the
// resourceVersion to resume from ("" to re-list).
func drain(ctx context.Context, w watch.Interface, fn func(watch.EventType, client.Object) bool) (done bool, rv string, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, rv, nil
			}
			switch ev.Type {
			case watch.Error:
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
					return false, "", nil // too old: re-list
				}
				return false, "", fmt.Errorf("watch error: %v", ev.Object)
			case watch.Bookmark:
				if o, ok := ev.Object.(client.Object); ok {
					rv = o.GetResourceVersion()
				}
				continue
			}
			o, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = o.GetResourceVersion()
			if fn(ev.Type, o) {
				return true, rv, nil
			}
		}
	}
}
