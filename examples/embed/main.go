// Command embed shows how another controller uses the exporterset library: it adds the
// ExporterSet reconciler to its own controller-runtime manager, next to a controller of its
// own, with a provisioner registered in code.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/provisioner"
)

func main() {
	// --kubeconfig is registered by controller-runtime's config package.
	namespace := flag.String("namespace", "default", "namespace to watch")
	runFor := flag.Duration("run-for", 0, "stop after this long (0: until SIGTERM)")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	if err := run(*namespace, *runFor); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(namespace string, runFor time.Duration) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = vtv1alpha1.AddToScheme(scheme)
	_ = jumpstarterv1alpha1.AddToScheme(scheme)

	// 1. The manager, with the caches the reconciler needs (label-restricted Pods/Secrets).
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Cache:   exporterset.CacheOptions(namespace),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}

	// 2. A provisioner registered in code: every instance runs one container.
	registry := provisioner.NewRegistry()
	if err := registry.Register("echo.example.dev", "embed example", echoProvisioner()); err != nil {
		return err
	}

	// 3. The ExporterSet reconciler.
	if err := exporterset.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), registry,
		exporterset.WithRecorder(mgr.GetEventRecorder("embed-exporterset"))).SetupWithManager(mgr); err != nil {
		return err
	}

	// 4. A controller of our own beside it: it publishes each pool's size in a ConfigMap.
	if err := ctrl.NewControllerManagedBy(mgr).Named("pool-summary").For(&vtv1alpha1.ExporterSet{}).
		Complete(&summaryReconciler{c: mgr.GetClient()}); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if runFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, runFor)
		defer cancel()
	}
	return mgr.Start(ctx)
}

func echoProvisioner() provisioner.Provisioner {
	return provisioner.Funcs{
		Description: provisioner.Description{Names: []string{"echo.example.dev"}, DefaultImages: provisioner.Images{
			Exporter: provisioner.Image{Image: "quay.io/jumpstarter-dev/jumpstarter:latest", PullPolicy: corev1.PullIfNotPresent},
		}},
		RenderPodFn: func(_ context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			pod := &corev1.Pod{}
			provisioner.AddExporterContainer(pod, req)
			return pod, nil
		},
	}
}

// summaryReconciler writes ConfigMap <set>-summary with the set's replica counts.
type summaryReconciler struct{ c client.Client }

func (r *summaryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var set vtv1alpha1.ExporterSet
	if err := r.c.Get(ctx, req.NamespacedName, &set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: set.Name + "-summary", Namespace: set.Namespace}}
	data := map[string]string{
		"replicas":  fmt.Sprint(set.Status.Replicas),
		"available": fmt.Sprint(set.Status.AvailableReplicas),
	}
	err := r.c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.Data = data
		return ctrl.Result{}, r.c.Create(ctx, cm)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	cm.Data = data
	return ctrl.Result{}, r.c.Update(ctx, cm)
}
