// Package wire is plugin protocol v1 between the ExporterSet controller and out-of-process
// provisioners, both ends of it: the go-plugin handshake and plugin sets, the gRPC server that
// serves a provisioner.Provisioner (what plugin.Serve runs), the gRPC client that implements
// provisioner.Provisioner on top of a connection (what the host wraps), the conversion of
// requests, objects and errors to and from pluginpb, and the EXPORTERSET_REATTACH_PROVISIONERS
// format.
//
// It is internal so that changing the protocol's Go side never breaks a plugin author's build:
// a plugin imports only package plugin (Serve) and package provisioner. What must never
// change is what crosses the process boundary: the handshake cookie, the plugin name, the
// protocol version and pluginpb's messages. Those are what keep plugin binaries built with an
// older SDK working with a newer host.
//
// Data flow of one call: host → GRPCClient (provisioner.Request → pluginpb.Request, objects as
// JSON) → gRPC → grpcServer in the plugin process → the plugin's provisioner.Provisioner →
// back, with a provisioner error carried as a gRPC status detail (errorToStatus /
// errorFromStatus) so that its code, fields and text survive.
package wire
