//! The shell script of the `ray-tls-generator` init container.
//!
//! An externally visible string: it lands in every mutated Pod's spec, so it is upstream's text
//! byte for byte (a leading and two trailing newlines included). Two of its quirks are kept on
//! purpose (docs/plugins/pod-mutator.md, "Webhook"): the second loop's initialiser assigns
//! `retires`, not `retries`, so both waits share one budget of 25 attempts; and it is bash (`((
//! ))`, `[[ ]]`) run by `sh -c`, which works where `/bin/sh` is bash, as in UBI images.

/// The script, run as `sh -c <script>`.
pub const RAY_TLS_GENERATOR_SCRIPT: &str = r#"
SECRET_DIR="/etc/ray-secret"
TLS_DIR="/etc/ray/tls"
SOURCE_RAY_TLS_PEM_FILE_PATH="${SECRET_DIR}/${POD_IP}"
TARGET_RAY_TLS_PEM_FILE_PATH="${TLS_DIR}/tls.pem"
SOURCE_RAY_CA_PEM_FILE_PATH="${SECRET_DIR}/ca.crt"
TARGET_RAY_CA_PEM_FILE_PATH="${TLS_DIR}/ca.crt"

RETRY_INTERVAL=10
MAX_RETRIES=24
INITIAL_DELAY_SECONDS=10

sleep $INITIAL_DELAY_SECONDS

for ((retries = 0; retries <= MAX_RETRIES; retries++)); do
    if [[ -f "$SOURCE_RAY_CA_PEM_FILE_PATH" ]]; then
        cp "$SOURCE_RAY_CA_PEM_FILE_PATH" "$TARGET_RAY_CA_PEM_FILE_PATH"
        chmod 644 "$TARGET_RAY_CA_PEM_FILE_PATH"
        break
    fi
    echo "Not found ca cert. Retrying in ${RETRY_INTERVAL} seconds... ($retries/$MAX_RETRIES)"
    sleep $RETRY_INTERVAL
done

if [[ ! -f "$SOURCE_RAY_CA_PEM_FILE_PATH" ]]; then
    echo "Error: CA Cert file not found!"
fi

for ((retires = 0; retries <= MAX_RETRIES; retries++)); do
    if [[ -f "$SOURCE_RAY_TLS_PEM_FILE_PATH" ]]; then
        cp "$SOURCE_RAY_TLS_PEM_FILE_PATH" "$TARGET_RAY_TLS_PEM_FILE_PATH"
        chmod 644 "$TARGET_RAY_TLS_PEM_FILE_PATH"
        break
    fi
    echo "Cert file not generated yet. Retrying in ${RETRY_INTERVAL} seconds... ($retries/$MAX_RETRIES)"

    sleep $RETRY_INTERVAL
done

if [[ ! -f "$SOURCE_RAY_TLS_PEM_FILE_PATH" ]]; then
    echo "Error: Cert file not generated!"
fi

if [ -f "$TARGET_RAY_TLS_PEM_FILE_PATH" ] && [ -f "$TARGET_RAY_CA_PEM_FILE_PATH" ]; then
    echo "Certificate files created successfully!"
    exit 0
else
    echo "Error: Failed to create certificate files."
    exit 1
fi

"#;
