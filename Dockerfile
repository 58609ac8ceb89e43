# tracex with OTF2 support: `docker build -t tracex .` then
#   docker run --rm -v "$PWD:/data" -w /data tracex convert report.sqlite trace.otf2
FROM rust:1-bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      pkg-config libclang-dev libotf2-trace-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# no .git in the build context: the commit comes from the build argument
ARG TRACEX_COMMIT=unknown
RUN TRACEX_COMMIT=$TRACEX_COMMIT cargo build --release --locked \
 && mkdir -p /out/man \
 && target/release/tracex man --dir /out/man \
 && target/release/tracex completions bash > /out/tracex.bash

# libotf2 is linked statically: the runtime image needs no OTF2 package
FROM debian:bookworm-slim
COPY --from=build /src/target/release/tracex /usr/local/bin/tracex
COPY --from=build /out/man/ /usr/local/share/man/man1/
COPY --from=build /out/tracex.bash /usr/share/bash-completion/completions/tracex
COPY fixtures/demo/ /usr/share/tracex/examples/
COPY LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES /usr/share/doc/tracex/
ENTRYPOINT ["tracex"]
CMD ["--help"]
