# The web and worker image for docker-compose.yml. It runs the same scripts as `make run`.

# Front-end libraries from the npm registry, exactly as package-lock.json pins them.
FROM node:20-bookworm-slim AS assets
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

FROM python:3.11-slim-bookworm

RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client openssh-client curl \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt ./
RUN python -m venv /app/.venv && /app/.venv/bin/pip install --no-cache-dir -r requirements.txt

COPY manage.py ./
COPY benchlab ./benchlab
COPY runs ./runs
COPY templates ./templates
COPY static ./static
COPY scripts ./scripts
COPY pyproject.toml package.json package-lock.json ./
COPY --from=assets /build/node_modules ./node_modules
RUN .venv/bin/python scripts/vendor-assets && rm -rf node_modules

ENV BENCHLAB_VAR_DIR=/app/var \
    BENCHLAB_BIND=0.0.0.0:8000 \
    PYTHONUNBUFFERED=1
EXPOSE 8000
