# The knowledge service (kgdb serve) as an image. Example, not run by kgdb's CI (no Docker
# engine there): docker compose -f docker/compose.yaml up -d --wait
FROM python:3.11-slim
WORKDIR /opt/kgdb
COPY pyproject.toml README.md ./
COPY kgdb ./kgdb
# torch first and pinned (the CPU wheel: an unpinned torch pulls GBs of CUDA libraries)
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir '.[serve]'
ENV KGDB_HOME=/var/lib/kgdb HF_HUB_OFFLINE=1
RUN useradd --system --home /var/lib/kgdb kgdb && mkdir -p /var/lib/kgdb && chown kgdb /var/lib/kgdb
USER kgdb
EXPOSE 8765
# The token file is mounted read-only (mode 0600, owned by the kgdb user); listening on
# 0.0.0.0 inside the container is refused without it.
CMD ["kgdb", "serve", "--host", "0.0.0.0", "--port", "8765", "--tokens", "/run/secrets/kgdb-tokens.json"]
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/livez', timeout=5)"
