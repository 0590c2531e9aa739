# Builds the same image as `make release` (tools/release/image.go), for
# those who use Docker; `make release` is the canonical way and needs no
# container daemon: it writes a reproducible multi-arch OCI layout
# tarball into dist/.
#
#   docker build --build-arg VERSION=$(git describe --tags) -t nic_exporter .
#
# Layout of both: scratch, plus /bin/nic_exporter (static), the CA bundle
# of Debian's ca-certificates at /etc/ssl/certs/ca-certificates.crt, an
# /etc/passwd and /etc/group with root and nobody, user 65534:65534,
# port 21180. The image runs as nobody and carries no file capabilities:
# grant what the enabled collectors need in the runtime's security
# context (README "Required privileges", deploy/kubernetes). For example,
# with the kernel log (CAP_SYSLOG under kernel.dmesg_restrict=1) and
# devlink evidence capture (CAP_NET_ADMIN):
#
#   docker run --rm --net=host -v /sys:/host/sys:ro --device /dev/kmsg \
#     --cap-drop=ALL --cap-add=NET_ADMIN --cap-add=SYSLOG \
#     nic_exporter --path.sysfs=/host/sys
#
# As a non-root user, capabilities granted by the runtime are only
# effective if it also raises them as ambient ones (Kubernetes does not):
# otherwise run with --user 0:0 and the same --cap-drop/--cap-add.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -buildid= -X github.com/prometheus/common/version.Version=${VERSION} -X github.com/prometheus/common/version.Revision=${REVISION}" \
      -o /rootfs/bin/nic_exporter ./cmd/nic_exporter
RUN mkdir -p /rootfs/etc/ssl/certs \
 && LC_ALL=C cat /usr/share/ca-certificates/mozilla/*.crt > /rootfs/etc/ssl/certs/ca-certificates.crt \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > /rootfs/etc/passwd \
 && printf 'root:x:0:\nnogroup:x:65534:\n' > /rootfs/etc/group

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
COPY --from=build /rootfs/ /
USER 65534:65534
EXPOSE 21180
ENV PATH=/bin
LABEL org.opencontainers.image.title="nic_exporter" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/nic-exporter/nic_exporter" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/bin/nic_exporter"]
