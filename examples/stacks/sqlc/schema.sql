CREATE TABLE IF NOT EXISTS invoices (
    id bigserial PRIMARY KEY,
    message_id text NOT NULL,
    body text NOT NULL
);
