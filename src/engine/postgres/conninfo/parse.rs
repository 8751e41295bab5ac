//! The two ways to write connection settings, as psql takes them: a URL
//! (`postgres://user:pw@h1:5432,h2/db?sslmode=require`, percent-encoded) and
//! a key=value string (`host=h port=5432 password='it''s'`, quoted with
//! single quotes, escaped with backslashes). Both become the same libpq
//! keyword -> value pairs; what they mean is for the module above.

use std::collections::HashMap;

use percent_encoding::percent_decode_str;

/// The libpq keywords stallbench understands.
const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "user",
    "dbname",
    "password",
    "passfile",
    "options",
    "application_name",
    "fallback_application_name",
    "connect_timeout",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "target_session_attrs",
];

/// Parses a URL or a key=value string into libpq keyword -> value pairs.
pub fn parse(text: &str) -> Result<HashMap<String, String>, String> {
    let text = text.trim();
    let pairs = match ["postgresql://", "postgres://"]
        .iter()
        .find_map(|scheme| text.strip_prefix(scheme))
    {
        Some(rest) => parse_url(rest)?,
        None => parse_key_values(text)?,
    };
    let mut values = HashMap::new();
    for (key, value) in pairs {
        if !KEYWORDS.contains(&key.as_str()) {
            return Err(format!(
                "unknown setting \"{key}\"; stallbench knows {}",
                KEYWORDS.join(", ")
            ));
        }
        values.insert(key, value);
    }
    Ok(values)
}

/// `[user[:password]@][host[:port][,...]][/dbname][?key=value&...]`, after the scheme.
fn parse_url(rest: &str) -> Result<Vec<(String, String)>, String> {
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, dbname) = main.split_once('/').unwrap_or((main, ""));
    let mut pairs = Vec::new();
    let hosts = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => {
            let (user, password) = match user_info.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (user_info, None),
            };
            if !user.is_empty() {
                pairs.push(("user".to_string(), decode(user)?));
            }
            if let Some(password) = password {
                pairs.push(("password".to_string(), decode(password)?));
            }
            hosts
        }
        None => authority,
    };
    if !hosts.is_empty() {
        let (mut names, mut ports) = (Vec::new(), Vec::new());
        for entry in hosts.split(',') {
            let (name, port) = split_host_port(entry)?;
            names.push(decode(name)?);
            ports.push(port.to_string());
        }
        if names.iter().any(|name| !name.is_empty()) {
            pairs.push(("host".to_string(), names.join(",")));
        }
        if ports.iter().any(|port| !port.is_empty()) {
            pairs.push(("port".to_string(), ports.join(",")));
        }
    }
    if !dbname.is_empty() {
        pairs.push(("dbname".to_string(), decode(dbname)?));
    }
    for parameter in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, value)) = parameter.split_once('=') else {
            return Err(format!(
                "URL parameter \"{parameter}\" has no value; write it as key=value"
            ));
        };
        pairs.push((decode(key)?, decode(value)?));
    }
    Ok(pairs)
}

/// `host`, `host:port`, `[::1]:port` (an IPv6 address in brackets).
fn split_host_port(entry: &str) -> Result<(&str, &str), String> {
    if let Some(bracketed) = entry.strip_prefix('[') {
        let Some((address, after)) = bracketed.split_once(']') else {
            return Err(format!(
                "host \"{entry}\": an IPv6 address needs its closing ]; write [::1]:5432"
            ));
        };
        return match after {
            "" => Ok((address, "")),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((address, port)),
                None => Err(format!(
                    "host \"{entry}\": unexpected text after ]; write [::1]:5432"
                )),
            },
        };
    }
    Ok(entry.split_once(':').unwrap_or((entry, "")))
}

fn decode(text: &str) -> Result<String, String> {
    percent_decode_str(text)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| format!("\"{text}\" is not UTF-8 once percent-decoded"))
}

/// `key = value key2='quoted \' value'`: whitespace separates pairs, single
/// quotes keep spaces, a backslash takes the next character as it is.
fn parse_key_values(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!(
                "\"{key}\" has no value; write settings as key=value, like host=db user=app"
            ));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => {
                        return Err(format!(
                            "the value of {key} has no closing quote; end it with '"
                        ));
                    }
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(String, String)> {
        let mut pairs: Vec<_> = parse(text).unwrap().into_iter().collect();
        pairs.sort();
        pairs
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut pairs: Vec<_> = expected
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        pairs.sort();
        pairs
    }

    #[test]
    fn a_url_is_percent_decoded() {
        assert_eq!(
            parsed(
                "postgresql://app:p%40ss%3Aw@db.example:6432/my%20db?sslmode=verify-full&sslrootcert=ca.pem"
            ),
            pairs(&[
                ("user", "app"),
                ("password", "p@ss:w"),
                ("host", "db.example"),
                ("port", "6432"),
                ("dbname", "my db"),
                ("sslmode", "verify-full"),
                ("sslrootcert", "ca.pem"),
            ])
        );
        assert_eq!(
            parsed("postgres://%2Fvar%2Frun%2Fpostgresql/shop"),
            pairs(&[("host", "/var/run/postgresql"), ("dbname", "shop")])
        );
        assert_eq!(parsed("postgres://"), pairs(&[]));
    }

    #[test]
    fn a_url_takes_several_hosts() {
        assert_eq!(
            parsed("postgres://h1:5433,h2,[::1]:5435/db?target_session_attrs=read-write"),
            pairs(&[
                ("host", "h1,h2,::1"),
                ("port", "5433,,5435"),
                ("dbname", "db"),
                ("target_session_attrs", "read-write"),
            ])
        );
    }

    #[test]
    fn key_values_take_quotes_and_escapes() {
        assert_eq!(
            parsed(r"host=a,b port = 1,2  password='it\'s a \\secret' user=o\ k dbname=''"),
            pairs(&[
                ("host", "a,b"),
                ("port", "1,2"),
                ("password", r"it's a \secret"),
                ("user", "o k"),
                ("dbname", ""),
            ])
        );
    }

    #[test]
    fn mistakes_are_named() {
        assert!(parse("host").unwrap_err().contains("key=value"));
        assert!(
            parse("password='open")
                .unwrap_err()
                .contains("closing quote")
        );
        assert!(
            parse("hots=db")
                .unwrap_err()
                .starts_with("unknown setting \"hots\"")
        );
        assert!(
            parse("postgres://h/db?sslmode")
                .unwrap_err()
                .contains("no value")
        );
        assert!(
            parse("postgres://[::1/db")
                .unwrap_err()
                .contains("closing ]")
        );
    }
}
