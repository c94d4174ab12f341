"""Python stubs of yamor's gRPC API, generated from proto/ at import time.

Needs `grpcio` and `grpcio-tools` (pip install grpcio grpcio-tools). The
stubs are generated into a temporary directory, so nothing generated is
kept in the repository and they always match proto/.
"""
import atexit
import importlib
import pathlib
import shutil
import sys
import tempfile

from grpc_tools import protoc

PROTO = pathlib.Path(__file__).resolve().parents[2] / "proto" / "proto"
_OUT = pathlib.Path(tempfile.mkdtemp(prefix="yamor-stubs-"))
atexit.register(shutil.rmtree, _OUT, ignore_errors=True)

_files = sorted(str(p.relative_to(PROTO)) for p in (PROTO / "yamor" / "v1").glob("*.proto"))
_status = protoc.main(
    ["protoc", f"-I{PROTO}", f"--python_out={_OUT}", f"--grpc_python_out={_OUT}", *_files]
)
if _status != 0:
    raise RuntimeError(f"protoc failed on {PROTO} with status {_status}")
sys.path.insert(0, str(_OUT))

common_pb2 = importlib.import_module("yamor.v1.common_pb2")
host_pb2 = importlib.import_module("yamor.v1.host_pb2")
host_pb2_grpc = importlib.import_module("yamor.v1.host_pb2_grpc")
organizer_pb2 = importlib.import_module("yamor.v1.organizer_pb2")
organizer_pb2_grpc = importlib.import_module("yamor.v1.organizer_pb2_grpc")


def target(url):
    """A gRPC target from a yamor URL (http://host:port)."""
    for prefix in ("http://", "https://"):
        if url.startswith(prefix):
            return url[len(prefix):]
    return url
