-- A fresh incarnation token.
SELECT gen_random_uuid()::VARCHAR
