SELECT value FROM openivm_settings WHERE name = ?
