"""XSpace schema (xplane.proto) and its generated protobuf module; see the .proto for how it is made."""
