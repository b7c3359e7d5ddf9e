FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY coordinator ./coordinator
COPY protocol ./protocol
COPY storage ./storage
RUN pip install --no-cache-dir .
VOLUME /data
EXPOSE 9092
# Bind all interfaces inside the container; advertise what clients on the host dial.
ENTRYPOINT ["minibroker", "--data-dir", "/data", "--host", "0.0.0.0", "--port", "9092"]
CMD ["--set", "advertised.listeners=PLAINTEXT://localhost:9092"]
