package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/exporterset/exporterset/internal/exportercfg"
	pb "github.com/exporterset/exporterset/internal/testing/e2e/standin/jumpstarterpb"
)

// retryEvery is the pause before the exporter connects again after its controller could not
// be reached or its Status stream broke (a controller restart, a network blip).
const retryEvery = time.Second

// callTimeout bounds one unary call to the controller.
const callTimeout = 10 * time.Second

// session is the exporter's connection to its Jumpstarter controller: the ControllerService
// over TLS (trusting the config's CA) with the config's token as a bearer credential.
type session struct {
	cfg  *exportercfg.Config
	conn *grpc.ClientConn
	ctrl pb.ControllerServiceClient
	// tlsErr is why the config's CA cannot verify anyone: every connection attempt fails
	// with it, as a TLS handshake would.
	tlsErr error
	// registered is set once Register succeeded, so that a stop unregisters.
	registered bool
	// hooks runs the config's lease hooks; nil without hooks.
	hooks *hookWorker
}

// callCredentials go with every call: the token as a bearer, and which object it speaks for
// (upstream's controller reads the kind, namespace and name from the metadata and checks
// them against the token's subject).
type callCredentials struct {
	token, namespace, name string
}

func (c callCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{
		"authorization":         "Bearer " + c.token,
		"jumpstarter-kind":      "Exporter",
		"jumpstarter-namespace": c.namespace,
		"jumpstarter-name":      c.name,
	}, nil
}

func (callCredentials) RequireTransportSecurity() bool { return true }

// newSession prepares the connection; nothing is dialled until the first call.
func newSession(cfg *exportercfg.Config) (*session, error) {
	s := &session{cfg: cfg}
	tc, err := tlsConfig(cfg)
	if err != nil {
		s.tlsErr = err
		return s, nil
	}
	conn, err := grpc.NewClient(cfg.Endpoint,
		grpc.WithTransportCredentials(credentials.NewTLS(tc)),
		grpc.WithPerRPCCredentials(callCredentials{token: cfg.Token, namespace: cfg.Metadata.Namespace, name: cfg.Metadata.Name}))
	if err != nil {
		return nil, fmt.Errorf("controller endpoint %q: %w", cfg.Endpoint, err)
	}
	s.conn, s.ctrl = conn, pb.NewControllerServiceClient(conn)
	return s, nil
}

// tlsConfig trusts the config's CA bundle for the endpoint's host (or nothing is verified
// when the config says tls.insecure).
func tlsConfig(cfg *exportercfg.Config) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if cfg.TLS.Insecure {
		tc.InsecureSkipVerify = true
		return tc, nil
	}
	pem, err := base64.StdEncoding.DecodeString(cfg.TLS.CA)
	if err != nil {
		return nil, fmt.Errorf("tls.ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("tls.ca holds no certificate that parses: nothing can be verified")
	}
	tc.RootCAs = pool
	return tc, nil
}

// leaseEvent is a change of the exporter's lease the controller announced.
type leaseEvent struct {
	// ended is the name of a lease that ended ("" when the event is an assignment).
	ended string
}

// serve keeps the exporter registered and its Status stream open until ctx ends,
// connecting again after every failure. Lease ends are sent on ended.
func (s *session) serve(ctx context.Context, ended chan<- leaseEvent) {
	lease := ""
	for ctx.Err() == nil {
		err := s.connectOnce(ctx, &lease, ended)
		if ctx.Err() != nil {
			return
		}
		log.Printf("controller at %s: %v; connecting again in %s", s.cfg.Endpoint, err, retryEvery)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryEvery):
		}
	}
}

// connectOnce registers, reports the exporter's state and follows the Status stream until
// it breaks. lease is the lease the exporter serves, kept across reconnections so that a
// controller restart mid-lease is not taken for the lease's end.
func (s *session) connectOnce(ctx context.Context, lease *string, ended chan<- leaseEvent) error {
	if s.tlsErr != nil {
		return s.tlsErr
	}
	if err := s.register(ctx); err != nil {
		return fmt.Errorf("Register: %w", err)
	}
	if *lease == "" {
		if err := s.report(ctx, pb.ExporterStatus_EXPORTER_STATUS_AVAILABLE, "Exporter registered and available"); err != nil {
			return fmt.Errorf("ReportStatus: %w", err)
		}
	}
	stream, err := s.ctrl.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return fmt.Errorf("Status: %w", err)
	}
	for {
		st, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("Status stream: %w", err)
		}
		switch {
		case st.GetLeased() && st.GetLeaseName() != *lease:
			*lease = st.GetLeaseName()
			log.Printf("lease %s assigned (client %s)", *lease, st.GetClientName())
			if s.hooks != nil {
				s.hooks.work <- leaseWork{lease: *lease, client: st.GetClientName()}
				continue
			}
			if err := s.report(ctx, pb.ExporterStatus_EXPORTER_STATUS_LEASE_READY, "Ready for commands"); err != nil {
				return fmt.Errorf("ReportStatus: %w", err)
			}
		case !st.GetLeased() && *lease != "":
			done := *lease
			*lease = ""
			log.Printf("lease %s ended", done)
			if s.hooks != nil {
				s.hooks.work <- leaseWork{lease: done, ended: true}
				continue
			}
			if s.cfg.ExitOnLeaseEnd {
				ended <- leaseEvent{ended: done}
				<-ctx.Done()
				return ctx.Err()
			}
			if err := s.report(ctx, pb.ExporterStatus_EXPORTER_STATUS_AVAILABLE, "Available for new lease"); err != nil {
				return fmt.Errorf("ReportStatus: %w", err)
			}
		}
	}
}

// register announces the exporter: no labels of its own (its config has none) and one
// device per exported driver under a root device.
func (s *session) register(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	root := newUUID()
	reports := []*pb.DriverInstanceReport{{Uuid: root, Labels: map[string]string{"jumpstarter.dev/name": s.cfg.Metadata.Name}}}
	for _, name := range s.cfg.DriverNames() {
		reports = append(reports, &pb.DriverInstanceReport{Uuid: newUUID(), ParentUuid: &root, Labels: map[string]string{"jumpstarter.dev/name": name}})
	}
	resp, err := s.ctrl.Register(ctx, &pb.RegisterRequest{Labels: map[string]string{}, Reports: reports})
	if err != nil {
		return err
	}
	s.registered = true
	log.Printf("exporter %s/%s registered with the controller at %s as %s (%d devices; exitOnLeaseEnd: %t)",
		s.cfg.Metadata.Namespace, s.cfg.Metadata.Name, s.cfg.Endpoint, resp.GetUuid(), len(reports), s.cfg.ExitOnLeaseEnd)
	return nil
}

// report sends the exporter's state.
func (s *session) report(ctx context.Context, st pb.ExporterStatus, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.ctrl.ReportStatus(ctx, &pb.ReportStatusRequest{Status: st, Message: &msg})
	if err == nil {
		log.Printf("reported %s: %s", st, msg)
	}
	return err
}

// unregister ends the registration after a hook made the exporter exit (it reported Offline
// already), bounded like stop.
func (s *session) unregister(reason string) { s.end(reason, false) }

// stop is the clean way out: report Offline and unregister (when the exporter ever
// registered), bounded by a few seconds so that an unreachable controller cannot hold up the
// container's termination.
func (s *session) stop(reason string) { s.end(reason, true) }

// end reports Offline (when offline) and unregisters, then closes the connection.
func (s *session) end(reason string, offline bool) {
	if s.conn == nil {
		return
	}
	defer s.conn.Close()
	if !s.registered {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if offline {
		if err := s.report(ctx, pb.ExporterStatus_EXPORTER_STATUS_OFFLINE, reason); err != nil {
			log.Printf("ReportStatus Offline: %v", err)
		}
	}
	if _, err := s.ctrl.Unregister(ctx, &pb.UnregisterRequest{Reason: reason}); err != nil {
		log.Printf("Unregister: %v", err)
		return
	}
	log.Printf("unregistered: %s", reason)
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
