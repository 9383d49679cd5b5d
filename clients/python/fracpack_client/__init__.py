"""fracpack's gRPC API from Python: the modules protoc generates from proto/, and two helpers.

clients/generate.sh OUT python writes the generated modules (fracpack.v1.*_pb2*, google.rpc.*_pb2)
and a copy of this package to OUT/python; run with PYTHONPATH=OUT/python and Debian's
/usr/bin/python3 (python3-grpcio, python3-protobuf).
"""
import grpc

from fracpack.v1 import cluster_pb2, cluster_pb2_grpc, extender_pb2, extender_pb2_grpc, types_pb2
from google.rpc import error_details_pb2, status_pb2

__all__ = ["Client", "connect", "error_details", "types_pb2", "extender_pb2", "extender_pb2_grpc",
           "cluster_pb2", "cluster_pb2_grpc", "status_pb2", "error_details_pb2"]


class Client:
    """One channel, a stub per service: client.extender (Filter, Prioritize, Bind, Preempt) and
    client.cluster (Apply, Remove, Release, Sync, Explain, Snapshot)."""

    def __init__(self, channel):
        self.channel = channel
        self.extender = extender_pb2_grpc.ExtenderStub(channel)
        self.cluster = cluster_pb2_grpc.ClusterStub(channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(target, credentials=None, timeout=10.0):
    """A Client for HOST:PORT once the server answers (grpc.FutureTimeoutError after timeout
    seconds). credentials: grpc.ssl_channel_credentials(...) for a server with --tls-cert."""
    if credentials is None:
        channel = grpc.insecure_channel(target)
    else:
        channel = grpc.secure_channel(target, credentials)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except BaseException:
        channel.close()  # not ready in time (or interrupted): the caller gets no channel to close
        raise
    return Client(channel)


_DETAILS = (error_details_pb2.BadRequest, error_details_pb2.QuotaFailure, error_details_pb2.PreconditionFailure)


def error_details(error):
    """The typed details of a refused call (grpc.RpcError): BadRequest, QuotaFailure or
    PreconditionFailure messages, decoded from its google.rpc.Status (grpc-status-details-bin)."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            out = []
            for detail in status_pb2.Status.FromString(value).details:
                for cls in _DETAILS:
                    if detail.Is(cls.DESCRIPTOR):
                        message = cls()
                        detail.Unpack(message)
                        out.append(message)
            return out
    return []
