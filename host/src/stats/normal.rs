//! The standard normal CDF and quantile, for the BCa interval (docs/method.md,
//! "Intervals"). Both are dimensionless.

/// Φ(x) = ½·erfc(−x/√2), accurate to double precision over the whole line.
pub(super) fn cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Φ⁻¹(p) for p in (0, 1); −∞ at 0, +∞ at 1, NaN outside [0, 1].
///
/// Acklam's rational approximation (relative error below 1.2e-9), then one
/// Halley step against [`cdf`], which brings it to about double precision.
pub(super) fn quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.024_25;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - P_LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    let e = cdf(x) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(cdf(0.0), 0.5);
        assert!((cdf(1.959_963_984_540_054) - 0.975).abs() < 1e-15);
        assert!((cdf(-1.0) - 0.158_655_253_931_457_05).abs() < 1e-15);
        assert_eq!(quantile(0.5), 0.0);
        assert!((quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-13);
        assert!((quantile(0.025) + 1.959_963_984_540_054).abs() < 1e-13);
        assert!((quantile(0.001) + 3.090_232_306_167_813_5).abs() < 1e-12);
        assert!((quantile(0.8413447460685429) - 1.0).abs() < 1e-13);
    }

    #[test]
    fn edges() {
        assert_eq!(quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(quantile(1.0), f64::INFINITY);
        assert!(quantile(1.5).is_nan());
        assert!(quantile(f64::NAN).is_nan());
    }

    #[test]
    fn quantile_inverts_cdf() {
        for i in 1..200 {
            let p = i as f64 / 200.0;
            assert!((cdf(quantile(p)) - p).abs() < 1e-14, "p = {p}");
        }
    }
}
