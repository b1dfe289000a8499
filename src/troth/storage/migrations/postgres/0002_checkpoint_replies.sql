-- The first answer to each UAIX checkpoint message, so a resend gets the same bytes.
CREATE TABLE checkpoint_replies (
    owner text NOT NULL,
    message_id text NOT NULL,
    request_checksum text NOT NULL,
    response bytea NOT NULL,
    PRIMARY KEY (owner, message_id)
);
