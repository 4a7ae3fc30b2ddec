INSERT INTO openivm_settings
SELECT ?, ?, ?, ?
WHERE NOT EXISTS (SELECT 1 FROM openivm_settings WHERE name = ?)
