-- A known setting's row. A database without one gets the default; one whose value is still
-- the default it was stored with (never changed by a user) follows a new default of the
-- extension; a value set by a user stays.
-- Parameters: name, default value, description.
MERGE INTO openivm_settings s
USING (SELECT ? AS n, ? AS d, ? AS descr) v ON s.name = v.n
WHEN MATCHED AND s.value = s.default_value AND s.default_value <> v.d
    THEN UPDATE SET value = v.d, default_value = v.d
WHEN NOT MATCHED THEN INSERT VALUES (v.n, v.d, v.d, v.descr)
