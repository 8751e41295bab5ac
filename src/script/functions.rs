//! The functions and operators of the expression language, applied to
//! evaluated, non-NULL arguments, with pgbench's definitions: the random
//! distributions (uniform, exponential, Gaussian, Zipfian), the hashes
//! (MurmurHash2 and FNV-1a on 64 bits) and the pseudorandom permutation.

use super::eval::EvalError;
use super::expression::Function;
use super::prng::Prng;
use super::value::Scalar;

/// Smallest `random_gaussian` parameter.
const MIN_GAUSSIAN_PARAMETER: f64 = 2.0;
/// `random_zipfian` parameter range.
const MIN_ZIPFIAN_PARAMETER: f64 = 1.001;
const MAX_ZIPFIAN_PARAMETER: f64 = 1000.0;

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const MURMUR2_MULTIPLIER: u64 = 0xc6a4_a793_5bd1_e995;
/// `MURMUR2_MULTIPLIER * 8` (the length of a 64-bit key), as pgbench writes it.
const MURMUR2_SEED_MIX: u64 = 0x3525_3c9a_de8f_4ca8;
const MURMUR2_SHIFT: u32 = 47;

/// `function` of `args` (no NULL among them; `IS` and `debug` excepted by the caller).
pub(super) fn apply(
    function: Function,
    args: &[Scalar],
    prng: &mut Prng,
) -> Result<Scalar, EvalError> {
    use Function::*;
    match function {
        Add | Subtract | Multiply | Divide | Modulo | Equal | NotEqual | LessOrEqual | Less => {
            arithmetic(function, args[0], args[1])
        }
        BitAnd | BitOr | BitXor | ShiftLeft | ShiftRight => {
            let (left, right) = (args[0].to_int()?, args[1].to_int()?);
            Ok(Scalar::Int(match function {
                BitAnd => left & right,
                BitOr => left | right,
                BitXor => left ^ right,
                // C on the usual hardware: the shift count is taken modulo 64.
                ShiftLeft => left.wrapping_shl(right as u32),
                _ => left.wrapping_shr(right as u32),
            }))
        }
        Not => Ok(Scalar::Bool(!args[0].to_bool()?)),
        Is => Ok(Scalar::Bool(match (args[0], args[1]) {
            (Scalar::Null, Scalar::Null) => true,
            (Scalar::Bool(left), Scalar::Bool(right)) => left == right,
            _ => false,
        })),
        Pi => Ok(Scalar::Double(std::f64::consts::PI)),
        Abs => Ok(match args[0] {
            Scalar::Int(value) => Scalar::Int(value.wrapping_abs()),
            other => Scalar::Double(other.to_double()?.abs()),
        }),
        Double | Sqrt | Ln | Exp => {
            let value = args[0].to_double()?;
            Ok(Scalar::Double(match function {
                Sqrt => value.sqrt(),
                Ln => value.ln(),
                Exp => value.exp(),
                _ => value,
            }))
        }
        Int => Ok(Scalar::Int(args[0].to_int()?)),
        Least | Greatest => extremum(function == Least, args),
        Random | RandomExponential | RandomGaussian | RandomZipfian => {
            random(function, args, prng).map(Scalar::Int)
        }
        Pow => Ok(Scalar::Double(
            args[0].to_double()?.powf(args[1].to_double()?),
        )),
        HashMurmur2 => Ok(Scalar::Int(hash_murmur2(
            args[0].to_int()?,
            args[1].to_int()? as u64,
        ))),
        HashFnv1a => Ok(Scalar::Int(hash_fnv1a(
            args[0].to_int()?,
            args[1].to_int()? as u64,
        ))),
        Permute => {
            let (value, size, seed) = (args[0].to_int()?, args[1].to_int()?, args[2].to_int()?);
            if size <= 0 {
                return Err(EvalError::PermuteSize);
            }
            Ok(Scalar::Int(permute(value, size, seed)))
        }
        Debug => Ok(args[0]),
    }
}

/// `+ - * / % = <> <= <`: in doubles when either side is a double (except
/// `%`), else in checked 64-bit integers.
fn arithmetic(function: Function, left: Scalar, right: Scalar) -> Result<Scalar, EvalError> {
    use Function::*;
    let any_double = matches!(left, Scalar::Double(_)) || matches!(right, Scalar::Double(_));
    if any_double && function != Modulo {
        let (a, b) = (left.to_double()?, right.to_double()?);
        return Ok(match function {
            Add => Scalar::Double(a + b),
            Subtract => Scalar::Double(a - b),
            Multiply => Scalar::Double(a * b),
            Divide => Scalar::Double(a / b),
            Equal => Scalar::Bool(a == b),
            NotEqual => Scalar::Bool(a != b),
            LessOrEqual => Scalar::Bool(a <= b),
            _ => Scalar::Bool(a < b),
        });
    }
    let (a, b) = (left.to_int()?, right.to_int()?);
    let checked = |result: Option<i64>, operation| {
        result
            .map(Scalar::Int)
            .ok_or(EvalError::IntegerOutOfRange { operation })
    };
    match function {
        Add => checked(a.checked_add(b), "add"),
        Subtract => checked(a.checked_sub(b), "sub"),
        Multiply => checked(a.checked_mul(b), "mul"),
        Equal => Ok(Scalar::Bool(a == b)),
        NotEqual => Ok(Scalar::Bool(a != b)),
        LessOrEqual => Ok(Scalar::Bool(a <= b)),
        Less => Ok(Scalar::Bool(a < b)),
        _ if b == 0 => Err(EvalError::DivisionByZero),
        // x % -1 is 0 even for the smallest integer.
        Modulo if b == -1 => Ok(Scalar::Int(0)),
        Modulo => Ok(Scalar::Int(a % b)),
        _ => checked(a.checked_div(b), "div"),
    }
}

/// `least`/`greatest`: in doubles if any argument is a double.
fn extremum(least: bool, args: &[Scalar]) -> Result<Scalar, EvalError> {
    if args.iter().any(|arg| matches!(arg, Scalar::Double(_))) {
        let mut best = args[0].to_double()?;
        for arg in &args[1..] {
            let value = arg.to_double()?;
            // C's Min/Max macros, NaN included.
            best = match least {
                true if best < value => best,
                false if best > value => best,
                _ => value,
            };
        }
        return Ok(Scalar::Double(best));
    }
    let mut best = args[0].to_int()?;
    for arg in &args[1..] {
        let value = arg.to_int()?;
        best = if least {
            best.min(value)
        } else {
            best.max(value)
        };
    }
    Ok(Scalar::Int(best))
}

/// The random functions: bounds checked, then one draw from `prng`.
fn random(function: Function, args: &[Scalar], prng: &mut Prng) -> Result<i64, EvalError> {
    let (min, max) = (args[0].to_int()?, args[1].to_int()?);
    if min > max {
        return Err(EvalError::EmptyRange);
    }
    if max
        .checked_sub(min)
        .and_then(|width| width.checked_add(1))
        .is_none()
    {
        return Err(EvalError::RangeTooLarge);
    }
    if function == Function::Random {
        return Ok(uniform(prng, min, max));
    }
    let parameter = args[2].to_double()?;
    match function {
        Function::RandomGaussian if parameter < MIN_GAUSSIAN_PARAMETER => {
            Err(EvalError::GaussianParameter { parameter })
        }
        Function::RandomGaussian => Ok(gaussian(prng, min, max, parameter)),
        Function::RandomZipfian
            if !(MIN_ZIPFIAN_PARAMETER..=MAX_ZIPFIAN_PARAMETER).contains(&parameter) =>
        {
            Err(EvalError::ZipfianParameter { parameter })
        }
        Function::RandomZipfian => Ok(zipfian(prng, min, max, parameter)),
        _ if parameter <= 0.0 || parameter.is_nan() => {
            Err(EvalError::ExponentialParameter { parameter })
        }
        _ => Ok(exponential(prng, min, max, parameter)),
    }
}

/// Uniform in `[min, max]`.
pub(super) fn uniform(prng: &mut Prng, min: i64, max: i64) -> i64 {
    min.wrapping_add(prng.u64_in(0, max.wrapping_sub(min) as u64) as i64)
}

/// Exponential in `[min, max]`: a truncated exponential of rate `parameter`
/// over the range, so that the last value has density `exp(-parameter)`.
pub(super) fn exponential(prng: &mut Prng, min: i64, max: i64, parameter: f64) -> i64 {
    let cut = (-parameter).exp();
    let uniform = 1.0 - prng.double(); // (0, 1]
    let fraction = -(cut + (1.0 - cut) * uniform).ln() / parameter; // [0, 1)
    min + ((max - min + 1) as f64 * fraction) as i64
}

/// Gaussian in `[min, max]`: a standard normal truncated to
/// `[-parameter, parameter)`, mapped onto the range.
pub(super) fn gaussian(prng: &mut Prng, min: i64, max: i64, parameter: f64) -> i64 {
    let normal = loop {
        let draw = prng.double_normal();
        if draw >= -parameter && draw < parameter {
            break draw;
        }
    };
    let fraction = (normal + parameter) / (parameter * 2.0);
    min + ((max - min + 1) as f64 * fraction) as i64
}

/// Bounded Zipfian in `[min, max]` with exponent `s`, by rejection (Devroye,
/// "Non-Uniform Random Variate Generation", p. 550-551), as pgbench draws it.
pub(super) fn zipfian(prng: &mut Prng, min: i64, max: i64, s: f64) -> i64 {
    let n = max - min + 1;
    if n <= 1 {
        return min;
    }
    let b = 2.0f64.powf(s - 1.0);
    let x = loop {
        let u = prng.double();
        let v = prng.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            break x;
        }
    };
    min - 1 + x as i64
}

/// 64-bit FNV-1a of the value's eight bytes, low byte first, from `seed`.
pub(super) fn hash_fnv1a(value: i64, seed: u64) -> i64 {
    let mut result = FNV_OFFSET_BASIS ^ seed;
    let mut rest = value;
    for _ in 0..8 {
        result ^= (rest & 0xff) as u64;
        result = result.wrapping_mul(FNV_PRIME);
        rest >>= 8;
    }
    result as i64
}

/// 64-bit MurmurHash2 of one 8-byte key.
pub(super) fn hash_murmur2(value: i64, seed: u64) -> i64 {
    let mut result = seed ^ MURMUR2_SEED_MIX;
    let mut key = value as u64;
    key = key.wrapping_mul(MURMUR2_MULTIPLIER);
    key ^= key >> MURMUR2_SHIFT;
    key = key.wrapping_mul(MURMUR2_MULTIPLIER);
    result ^= key;
    result = result.wrapping_mul(MURMUR2_MULTIPLIER);
    result ^= result >> MURMUR2_SHIFT;
    result = result.wrapping_mul(MURMUR2_MULTIPLIER);
    result ^= result >> MURMUR2_SHIFT;
    result as i64
}

/// The position of `value` (modulo `size`) in a pseudorandom permutation of
/// `0..size` chosen by `seed`: six rounds of a random odd multiply, xor and
/// rotate of the lower and upper overlapping halves, then a random offset.
pub(super) fn permute(value: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut prng = Prng::new(seed as u64);
    let size = size as u64;
    let mut v = (value as u64) % size;
    let mask_bits = 63 - size.leading_zeros();
    let mask = (1u64 << mask_bits) - 1;
    let mix = |x: u64, multiplier: u64, xor: u64| {
        let x = (x.wrapping_mul(multiplier) ^ xor) & mask;
        ((x << 1) & mask) | (x >> (mask_bits - 1))
    };
    for _ in 0..6 {
        let multiplier = (prng.next_u64() & mask) | 1;
        let xor = prng.next_u64() & mask;
        if v <= mask {
            v = mix(v, multiplier, xor);
        }
        let multiplier = (prng.next_u64() & mask) | 1;
        let xor = prng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, multiplier, xor);
        }
        let offset = prng.u64_in(0, size - 1);
        v = (v + offset) % size;
    }
    v as i64
}
