# Images of the five kcp-rs binaries, for any engine (docker, podman, buildah):
#
#   docker build --target kcp-operator -t ghcr.io/kcp-rs/kcp-operator:0.1.0 .
#
# One target per binary; entrypoints where upstream's images have them (/manager for
# kcp-operator and the Cluster API providers, /usr/local/bin/<tool> for the kcp agents). CI
# builds the same images without a daemon from deploy/images/build.sh (umoci), which is what
# README's image sizes are measured on.

FROM docker.io/library/rust:1.95-bookworm AS build
# `release`, or `lean` (fat LTO: smaller code and idle RSS, a much longer link; see Cargo.toml).
ARG PROFILE=release
WORKDIR /src
COPY . .
RUN cargo build --profile "$PROFILE" -p kcp-bins \
      --bin kcp-init-agent --bin kcp-api-syncagent --bin kcp-operator \
      --bin capi-provider-agent --bin capi-provider-kind \
 && for b in kcp-init-agent kcp-api-syncagent kcp-operator capi-provider-agent capi-provider-kind; do \
      objcopy --strip-debug "target/$PROFILE/$b" /$b; \
    done

# glibc and libgcc, nothing else; runs as 65532:65532.
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
LABEL org.opencontainers.image.source="https://github.com/kcp-rs/kcp-rs" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532

FROM runtime AS kcp-init-agent
COPY --from=build /kcp-init-agent /usr/local/bin/init-agent
ENTRYPOINT ["/usr/local/bin/init-agent"]

FROM runtime AS kcp-api-syncagent
COPY --from=build /kcp-api-syncagent /usr/local/bin/api-syncagent
ENTRYPOINT ["/usr/local/bin/api-syncagent"]

FROM runtime AS kcp-operator
COPY --from=build /kcp-operator /manager
ENTRYPOINT ["/manager"]

FROM runtime AS capi-provider-agent
COPY --from=build /capi-provider-agent /manager
ENTRYPOINT ["/manager"]

FROM runtime AS capi-provider-kind
COPY --from=build /capi-provider-kind /manager
ENTRYPOINT ["/manager"]
