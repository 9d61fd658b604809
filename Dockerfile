# syntax=docker/dockerfile:1
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gateway ./cmd/gateway

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /gateway
COPY config.example.yaml /etc/agate/config.yaml
ENV GATEWAY_CONFIG=/etc/agate/config.yaml
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/gateway"]
