package jumpsim

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// DefaultEndpoint is the gRPC address written to status.endpoint unless WithEndpoint is used.
const DefaultEndpoint = "grpc.jumpstarter.example:443"

// DefaultNodeName is the node the simulated kubelet binds Pods to.
const DefaultNodeName = "jumpsim-node"

// DefaultCredentialSecretSuffix is appended to an Exporter's name to name its token Secret.
const DefaultCredentialSecretSuffix = "-token"

type options struct {
	namespaces       []string
	endpoint         string
	credentialSuffix string
	credentialDelay  time.Duration
	heartbeat        time.Duration
	afterLeaseDelay  time.Duration
	nodeName         string
	podStartDelay    time.Duration
	podTermDelay     time.Duration
	podFailure       func(*corev1.Pod) bool
	regDelay         time.Duration
	nodeCapacity     corev1.ResourceList
	crashBackOff     time.Duration
	crashBackOffMax  time.Duration
	pullBackOff      time.Duration
	onlineTimeout    time.Duration
	configChecks     bool
	mountChecks      bool
	controller       bool
	kubelet          bool
	gc               bool
	realNode         bool
	leaseEnd         LeaseEndFunc
	workers          int
	eventLimit       int
	logger           logr.Logger
}

func defaultOptions() options {
	return options{
		endpoint:         DefaultEndpoint,
		credentialSuffix: DefaultCredentialSecretSuffix,
		nodeName:         DefaultNodeName,
		crashBackOff:     DefaultCrashLoopBackOff,
		crashBackOffMax:  DefaultCrashLoopBackOffMax,
		pullBackOff:      DefaultImagePullBackOff,
		onlineTimeout:    DefaultOnlineTimeout,
		configChecks:     true,
		mountChecks:      true,
		controller:       true,
		kubelet:          true,
		gc:               true,
		workers:          8,
		eventLimit:       100000,
		logger:           logr.New(discardSink{}),
	}
}

// Option configures a Simulator.
type Option func(*options)

// WithNamespaces restricts the Simulator to these namespaces: it caches, and acts on, nothing
// else. Without it the Simulator watches the whole cluster.
func WithNamespaces(namespaces ...string) Option {
	return func(o *options) { o.namespaces = append(o.namespaces, namespaces...) }
}

// WithEndpoint sets the controller address written to Exporters' status.endpoint.
func WithEndpoint(endpoint string) Option { return func(o *options) { o.endpoint = endpoint } }

// WithCredentialSecretSuffix names token Secrets "<exporter><suffix>" instead of
// "<exporter>-token" (upstream Jumpstarter uses "-exporter"; testing with it shows whether
// the controller's own Secret names can collide with the real controller's).
func WithCredentialSecretSuffix(suffix string) Option {
	return func(o *options) { o.credentialSuffix = suffix }
}

// WithCredentialDelay issues credentials no earlier than this long after the Simulator first
// saw an Exporter, so tests can observe the controller waiting for them.
func WithCredentialDelay(d time.Duration) Option { return func(o *options) { o.credentialDelay = d } }

// WithHeartbeat refreshes status.lastSeen of online Exporters this often, as a connected
// exporter does. Off by default: it costs one write per Exporter per period.
func WithHeartbeat(d time.Duration) Option { return func(o *options) { o.heartbeat = d } }

// WithAfterLeaseDelay makes an Exporter that stays up after a lease (exitOnLeaseEnd false)
// report exporterStatus AfterLeaseHook for this long before it is Available again; the lease
// scheduler skips it meanwhile (NotReady). Off by default.
func WithAfterLeaseDelay(d time.Duration) Option { return func(o *options) { o.afterLeaseDelay = d } }

// WithNodeName sets the node name the kubelet binds Pods to.
func WithNodeName(name string) Option { return func(o *options) { o.nodeName = name } }

// WithPodStartDelay keeps Pods Pending for this long after the kubelet first saw them bound.
// [Simulator.SetPodStartDelay] changes it at run time.
func WithPodStartDelay(d time.Duration) Option { return func(o *options) { o.podStartDelay = d } }

// WithRegistrationDelay delays registration: an exporter whose Pod runs becomes Registered
// and Online only this long after the Simulator first saw its Pod Running, as a slow
// exporter process (or a slow controller) would. [Simulator.SetRegistrationDelay] changes it
// at run time.
func WithRegistrationDelay(d time.Duration) Option { return func(o *options) { o.regDelay = d } }

// WithNodeCapacity replaces the simulated node's capacity (and allocatable, which equals
// it) by list. Resources not in list are absent from the node: without
// devices.kubevirt.io/kvm in it, a Pod asking for KVM stays Unschedulable. The default is
// [DefaultNodeCapacity].
func WithNodeCapacity(list corev1.ResourceList) Option {
	return func(o *options) { o.nodeCapacity = list.DeepCopy() }
}

// WithCrashLoopBackOff sets the kubelet's restart back-off for crashing containers: the
// first restart waits initial, each further one twice as long, up to limit. A real kubelet
// uses 10s and 5m; the defaults ([DefaultCrashLoopBackOff], [DefaultCrashLoopBackOffMax])
// are shorter so tests see restartCount rise within seconds.
func WithCrashLoopBackOff(initial, limit time.Duration) Option {
	return func(o *options) {
		if initial > 0 {
			o.crashBackOff = initial
		}
		if limit >= o.crashBackOff {
			o.crashBackOffMax = limit
		}
	}
}

// WithImagePullBackOff sets how long the kubelet waits between pulls of an image that
// failed (ImagePullBackOff), default [DefaultImagePullBackOff]. A real kubelet starts at 10s
// and doubles up to 5m; here the wait is constant so a cleared fault heals quickly.
func WithImagePullBackOff(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.pullBackOff = d
		}
	}
}

// WithOnlineTimeout sets how long an exporter that stopped reporting (its node was lost)
// stays Online after it was last seen: upstream's controller reports an exporter Online
// while it was seen within the last minute, the default ([DefaultOnlineTimeout]).
func WithOnlineTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.onlineTimeout = d
		}
	}
}

// WithoutConfigChecks lets exporters register whatever their mounted config says. By
// default an exporter whose config names another endpoint than its Exporter's
// status.endpoint, holds a token other than its current credential, or trusts an empty or
// non-PEM CA (without tls.insecure) never registers, as a real one could not.
func WithoutConfigChecks() Option { return func(o *options) { o.configChecks = false } }

// WithPodTerminationDelay keeps deleted (Terminating) Pods for this long after the kubelet
// saw the deletion before it removes them. Without it they go as soon as the kubelet sees them.
func WithPodTerminationDelay(d time.Duration) Option {
	return func(o *options) { o.podTermDelay = d }
}

// WithPodFailure fails, instead of starting, every Pod for which fail returns true (phase
// Failed, exporter container exit code 1). fail must be safe for concurrent use.
func WithPodFailure(fail func(*corev1.Pod) bool) Option {
	return func(o *options) { o.podFailure = fail }
}

// WithoutMountChecks lets Pods run even when Secrets or ConfigMaps they reference are missing
// (a real kubelet keeps such Pods in ContainerCreating / CreateContainerConfigError).
func WithoutMountChecks() Option { return func(o *options) { o.mountChecks = false } }

// WithoutController turns the simulated Jumpstarter controller (credentials, presence, lease
// scheduling) off.
func WithoutController() Option { return func(o *options) { o.controller = false } }

// WithoutKubelet turns the simulated kubelet off.
func WithoutKubelet() Option { return func(o *options) { o.kubelet = false } }

// WithoutGarbageCollector turns the simulated garbage collector off, leaving envtest's
// default: owner references never cascade.
func WithoutGarbageCollector() Option { return func(o *options) { o.gc = false } }

// WithWorkers sets how many objects each simulated component reconciles at once (default 8).
func WithWorkers(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.workers = n
		}
	}
}

// WithEventLimit caps how many records Events keeps (the oldest are dropped; default 100000).
func WithEventLimit(n int) Option { return func(o *options) { o.eventLimit = n } }

// WithLogger sets the logger of the Simulator's manager and components (default: discard).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = l } }

// discardSink drops everything. logr.Discard has a nil sink, which controller-runtime treats
// as "no logger given" and replaces by its global logger (which then warns that it was never
// set).
type discardSink struct{}

func (discardSink) Init(logr.RuntimeInfo)            {}
func (discardSink) Enabled(int) bool                 { return false }
func (discardSink) Info(int, string, ...any)         {}
func (discardSink) Error(error, string, ...any)      {}
func (d discardSink) WithValues(...any) logr.LogSink { return d }
func (d discardSink) WithName(string) logr.LogSink   { return d }
