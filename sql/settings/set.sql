UPDATE openivm_settings SET value = ? WHERE name = ?
