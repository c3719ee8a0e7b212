#!/usr/bin/env bash
# One-time set-up for docker/compose.yml's OpenSearch: a private CA, the node certificate
# (HTTP + transport TLS), the admin client certificate (securityadmin), and internal_users.yml
# with bcrypt hashes of OPENSEARCH_ADMIN_PASSWORD and CAIRN_OPENSEARCH_PASSWORD from docker/.env.
set -euo pipefail
cd "$(dirname "$0")"
set -a; . ../.env; set +a
: "${OPENSEARCH_ADMIN_PASSWORD:?set it in docker/.env}" "${CAIRN_OPENSEARCH_PASSWORD:?set it in docker/.env}"
mkdir -p certs && cd certs
[ -f root-ca.pem ] || {
  openssl genrsa -out root-ca-key.pem 3072
  openssl req -new -x509 -sha256 -days 1825 -key root-ca-key.pem -subj "/O=cairn/OU=cairn/CN=cairn-root-ca" -out root-ca.pem
}
issue() {  # name CN
  openssl genrsa -out "$1-key-tmp.pem" 3072
  openssl pkcs8 -inform PEM -outform PEM -in "$1-key-tmp.pem" -topk8 -nocrypt -v1 PBE-SHA1-3DES -out "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "/O=cairn/OU=cairn/CN=$2" -out "$1.csr"
  printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\n' "$2" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA root-ca.pem -CAkey root-ca-key.pem -CAcreateserial -sha256 -days 825 \
    -extfile "$1.ext" -out "$1.pem"
  rm -f "$1-key-tmp.pem" "$1.csr" "$1.ext"
}
[ -f node.pem ] || issue node opensearch
[ -f admin.pem ] || issue admin admin
chmod 0640 ./*-key.pem
cd ..
hash() { docker run --rm opensearchproject/opensearch:3.1.0 plugins/opensearch-security/tools/hash.sh -p "$1" | tail -1; }
cat > internal_users.yml <<YAML
_meta:
  type: "internalusers"
  config_version: 2
admin:
  hash: "$(hash "$OPENSEARCH_ADMIN_PASSWORD")"
  reserved: true
  backend_roles: ["admin"]
cairn:
  hash: "$(hash "$CAIRN_OPENSEARCH_PASSWORD")"
  reserved: false
YAML
echo "certificates in docker/opensearch/certs, users in docker/opensearch/internal_users.yml"
