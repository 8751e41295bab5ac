//! The PG* environment variables, which fill in what a connection string
//! leaves out, as they do for every libpq program (psql, pg_dump, pgbench).

use std::collections::HashMap;

/// libpq keyword -> the variable that supplies it.
const VARIABLES: &[(&str, &str)] = &[
    ("host", "PGHOST"),
    ("hostaddr", "PGHOSTADDR"),
    ("port", "PGPORT"),
    ("user", "PGUSER"),
    ("dbname", "PGDATABASE"),
    ("password", "PGPASSWORD"),
    ("passfile", "PGPASSFILE"),
    ("options", "PGOPTIONS"),
    ("application_name", "PGAPPNAME"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("sslcert", "PGSSLCERT"),
    ("sslkey", "PGSSLKEY"),
    ("target_session_attrs", "PGTARGETSESSIONATTRS"),
];

/// Sets each keyword the string did not give from its variable, if that is set and not empty.
pub fn fill_from_env(values: &mut HashMap<String, String>, env: &dyn Fn(&str) -> Option<String>) {
    for (keyword, variable) in VARIABLES {
        if values.contains_key(*keyword) {
            continue;
        }
        if let Some(value) = env(variable).filter(|value| !value.is_empty()) {
            values.insert(keyword.to_string(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_string_wins_over_the_environment() {
        let mut values = HashMap::from([("host".to_string(), "from-string".to_string())]);
        let env = |name: &str| match name {
            "PGHOST" => Some("from-env".to_string()),
            "PGPORT" => Some("6000".to_string()),
            "PGUSER" => Some(String::new()),
            _ => None,
        };
        fill_from_env(&mut values, &env);
        assert_eq!(values["host"], "from-string");
        assert_eq!(values["port"], "6000");
        assert!(!values.contains_key("user"), "an empty variable is unset");
    }
}
