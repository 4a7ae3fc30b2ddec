-- A known setting's row, unless the database has one (a value set by the user stays).
-- Parameters: name, default value, description.
INSERT INTO openivm_settings
SELECT n, d, d, descr FROM (SELECT ? AS n, ? AS d, ? AS descr) v
WHERE NOT EXISTS (SELECT 1 FROM openivm_settings s WHERE s.name = v.n)
