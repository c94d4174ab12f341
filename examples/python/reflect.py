"""List a yamor server's services and methods through gRPC reflection.

Needs only grpcio and grpcio-reflection, no .proto files: the server
describes itself (reflection v1alpha, as grpcurl 1.8 also speaks).

    python examples/python/reflect.py 127.0.0.1:7070
"""

import sys

import grpc
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)


def main() -> None:
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7070"
    address = address.removeprefix("http://")
    with grpc.insecure_channel(address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = DescriptorPool(database)
        for name in sorted(database.get_services()):
            if name.startswith("grpc.reflection."):
                continue
            service = pool.FindServiceByName(name)
            methods = ", ".join(m.name for m in service.methods)
            print(f"{name}: {methods}")


if __name__ == "__main__":
    main()
