# minibroker image: slim Python base, wheels built in a throw-away stage, runs as a non-root user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY common ./common
COPY coordinator ./coordinator
COPY minibroker ./minibroker
COPY pipelines ./pipelines
COPY protocol ./protocol
COPY storage ./storage
# Every dependency ships manylinux wheels for x86-64 and arm64; the compiler is for minibroker's
# own record walk (storage/_record_walk.c) and stays in this stage.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin minibroker \
    && mkdir -p /data && chown minibroker:minibroker /data
COPY --from=build /wheels /wheels
# The wheel directory holds exactly the versions resolved above: nothing to pin here.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir --no-index --find-links=/wheels minibroker && rm -rf /wheels \
    && python -c "import minibroker.storage._record_walk"
USER 10001:10001
ENV PYTHONUNBUFFERED=1
VOLUME /data
EXPOSE 9092
# Healthy once the broker accepts connections (it listens only after recovery has finished).
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=10 \
    CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 9092), 2).close()"]
# Bind all interfaces inside the container; advertise what clients on the host dial.
ENTRYPOINT ["minibroker", "--data-dir", "/data", "--host", "0.0.0.0", "--port", "9092"]
CMD ["--set", "advertised.listeners=PLAINTEXT://localhost:9092"]
