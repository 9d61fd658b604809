# syntax=docker/dockerfile:1
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The profile-guided build names its profile: cmd/gateway/gateway.pgo is not default.pgo, which
# `go test ./...` would also apply to the race build of cmd/gateway's tests (PERFORMANCE.md).
RUN CGO_ENABLED=0 go build -trimpath -pgo=cmd/gateway/gateway.pgo -ldflags "-s -w -X main.version=${VERSION}" -o /out/gateway ./cmd/gateway

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /gateway
COPY config.example.yaml /etc/agate/config.yaml
ENV GATEWAY_CONFIG=/etc/agate/config.yaml
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/gateway"]
