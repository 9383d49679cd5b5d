// Package client connects to fracpack's gRPC API: fracpack.v1.Extender (Filter, Prioritize, Bind,
// Preempt) and fracpack.v1.Cluster (Apply, Remove, Release, Sync, Explain, Snapshot).
//
// The messages and stubs are generated from proto/ into package fracpackv1 (import "fracpack/v1")
// by clients/generate.sh, which copies this package to fracpack/client in the same GOPATH; it builds
// offline, in GOPATH mode, from Debian's Go sources under /usr/share/gocode (docs/grpc.md).
package client

import (
	"context"
	"time"

	pb "fracpack/v1"

	_ "google.golang.org/genproto/googleapis/rpc/errdetails" // so Details decodes BadRequest, QuotaFailure, PreconditionFailure
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Client is one connection and a stub per service.
type Client struct {
	Conn     *grpc.ClientConn
	Extender pb.ExtenderClient
	Cluster  pb.ClusterClient
}

// Dial connects to HOST:PORT and waits up to timeout for the server to answer. Without options
// the connection is plaintext; for a server with --tls-cert pass
// grpc.WithTransportCredentials(credentials.NewTLS(...)).
func Dial(target string, timeout time.Duration, opts ...grpc.DialOption) (*Client, error) {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithInsecure()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.DialContext(ctx, target, append(opts, grpc.WithBlock())...)
	if err != nil {
		return nil, err
	}
	return &Client{Conn: conn, Extender: pb.NewExtenderClient(conn), Cluster: pb.NewClusterClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.Conn.Close() }

// Details are the typed details of a refused call, from its google.rpc.Status:
// *errdetails.BadRequest, *errdetails.QuotaFailure or *errdetails.PreconditionFailure.
func Details(err error) []interface{} { return status.Convert(err).Details() }
