-- name: CreateInvoice :one
INSERT INTO invoices (message_id, body) VALUES ($1, $2) RETURNING id;
