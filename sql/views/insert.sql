INSERT INTO openivm_views
VALUES (?, ?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP, NULL, 0)
