INSERT INTO openivm_constraints_cache
VALUES ('RELY_FK', true, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)
