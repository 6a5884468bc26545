// The formulas of posenc_ref, in JavaScript, for the explorer and the widgets of the site.
//
// Each function mirrors the Python function it names, operation for operation in float64, so
// that the browser test (tests/site/test_explorer.py) can compare its results with the package's
// to a few units in the last place: a formula that drifts from the package fails that test.
// Arguments are checked as the package checks them; a bad value throws an Error whose message
// starts with the argument's name, as the package's does. Parameter objects use the package's
// keyword names (factor, original_max_len, beta_fast, ...), so a released model's scaling dict
// (RopeSpec.scaling) can be passed as it is.
(function (root) {
  "use strict";

  // --------------------------------------------------------------- checks (posenc_ref._checks)
  //
  // The messages are the package's, character for character (the browser test compares them):
  // values are written as Python's repr writes them, so a float argument reads "4.0", not "4".

  // Python's repr of a float: "4.0", "0.5", "1e-05", "1e+16", "inf", "nan".
  function pyFloat(x) {
    if (Number.isNaN(x)) return "nan";
    if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-4 || a >= 1e16)) {
      const [mantissa, exponent] = x.toExponential().split("e"); // shortest digits, like repr
      const digits = exponent.replace(/^[+-]/, "").padStart(2, "0");
      return `${mantissa}e${exponent[0] === "-" ? "-" : "+"}${digits}`;
    }
    return Number.isInteger(x) ? x.toFixed(1) : String(x);
  }

  // Python's format(x, "g"): six significant digits, trailing zeros dropped.
  function pyG(x) {
    if (!Number.isFinite(x)) return pyFloat(x);
    if (x === 0) return "0";
    const [mantissa, exponent] = x.toExponential(5).split("e");
    const e = Number(exponent);
    if (e < -4 || e >= 6) {
      const m = mantissa.replace(/\.?0+$/, "");
      return `${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    return Number(x.toPrecision(6)).toString().replace(/e.*$/, "");
  }

  // Python's repr of a value the way the package shows it; `float` for arguments it converts.
  function show(value, float = false) {
    if (value === null || value === undefined) return "None";
    if (typeof value === "boolean") return value ? "True" : "False";
    if (typeof value === "string") return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
    if (typeof value === "number") return float || !Number.isInteger(value) ? pyFloat(value) : String(value);
    if (Array.isArray(value) || ArrayBuffer.isView(value)) {
      return `[${Array.from(value, (v) => show(v, float)).join(", ")}]`;
    }
    return String(value);
  }

  function isInt(value) {
    return typeof value === "number" && Number.isInteger(value);
  }

  // check_int
  function checkInt(name, value, minimum = 0) {
    if (!isInt(value) || value < minimum) {
      throw new Error(`${name} must be an integer >= ${minimum}, got ${show(value)}`);
    }
    return value;
  }

  // check_dim
  function checkDim(value, name = "dim") {
    if (!isInt(value)) throw new Error(`${name} must be a positive even integer, got ${show(value)}`);
    if (value <= 0 || value % 2) {
      throw new Error(
        `${name} must be a positive even integer (pairs of sin/cos or of rotated coordinates), got ${show(value)}`,
      );
    }
    return value;
  }

  // check_positive_float: the value is a float from here on, so it reads "1.0".
  function checkPositive(name, value, minimum = null) {
    if (typeof value !== "number" || Number.isNaN(value)) {
      throw new Error(`${name} must be a finite real number, got ${show(value)}`);
    }
    if (!Number.isFinite(value)) throw new Error(`${name} must be finite, got ${pyFloat(value)}`);
    if (minimum === null ? value <= 0 : value < minimum) {
      const bound = minimum === null ? "> 0" : `>= ${pyFloat(minimum)}`;
      throw new Error(`${name} must be ${bound}, got ${pyFloat(value)}`);
    }
    return value;
  }

  // check_base
  function checkBase(value) {
    checkPositive("base", value);
    if (value <= 1) {
      throw new Error(`base must be a finite number > 1 (10000 in the paper), got ${pyFloat(value)}`);
    }
    return value;
  }

  // check_bool
  function checkBool(name, value) {
    if (typeof value !== "boolean") throw new Error(`${name} must be True or False, got ${show(value)}`);
    return value;
  }

  const checkFactor = (value) => checkPositive("factor", value, 1);

  // rope_scaling._check_ntk_dim
  function checkNtkDim(value) {
    checkDim(value);
    // One pair: omega_0 = 1 for every base, so the base has nothing to change.
    if (value < 4) throw new Error(`dim must be an even integer >= 4 for NTK scaling, got ${show(value)}`);
    return value;
  }

  // rope_scaling._check_factor_list
  function checkFactorList(name, values, pairs) {
    if (!Array.isArray(values) && !ArrayBuffer.isView(values)) {
      throw new Error(`${name} must be a list of ${pairs} positive numbers, got ${show(values, true)}`);
    }
    if (values.length !== pairs) {
      throw new Error(`${name} must have dim // 2 = ${pairs} entries (one per rotary pair), got ${values.length}`);
    }
    values.forEach((v, i) => checkPositive(`${name}[${i}]`, v));
    return Float64Array.from(values);
  }

  // RotaryEmbedding's head_dim and rotary_dim
  function checkRotaryDim(headDim, rotaryDim) {
    checkDim(headDim, "head_dim");
    checkDim(rotaryDim, "rotary_dim");
    if (rotaryDim > headDim) {
      throw new Error(
        `rotary_dim must be an even integer <= head_dim=${headDim} (the coordinates past it are passed through), got ${rotaryDim}`,
      );
    }
  }

  // --------------------------------------------------------------- frequencies (absolute.py)

  // posenc_ref.inv_freq: omega_i = base ** -(2i / dim), float64, shape (dim / 2,).
  function invFreq(dim, base = 10000) {
    checkDim(dim);
    checkBase(base);
    const out = new Float64Array(dim / 2);
    for (let i = 0; i < dim / 2; i++) out[i] = Math.pow(base, -((2 * i) / dim));
    return out;
  }

  const divide = (omega, by) => omega.map((w) => w / by);

  // --------------------------------------------------------------- rope_scaling.py

  // Each returns {invFreq, attentionFactor}, like ScaledFrequencies.
  function linear(dim, base = 10000, { factor } = {}) {
    checkFactor(factor);
    return { invFreq: divide(invFreq(dim, base), factor), attentionFactor: 1 };
  }

  function ntkAware(dim, base = 10000, { factor } = {}) {
    checkNtkDim(dim);
    checkBase(base);
    checkFactor(factor);
    return { invFreq: invFreq(dim, base * Math.pow(factor, dim / (dim - 2))), attentionFactor: 1 };
  }

  function dynamicNtk(dim, base = 10000, { factor, seq_len, original_max_len } = {}) {
    checkNtkDim(dim);
    checkBase(base);
    checkFactor(factor);
    checkInt("seq_len", seq_len);
    checkInt("original_max_len", original_max_len, 1);
    const length = Math.max(seq_len, original_max_len);
    const ratio = (factor * length) / original_max_len - (factor - 1);
    return { invFreq: invFreq(dim, base * Math.pow(ratio, dim / (dim - 2))), attentionFactor: 1 };
  }

  function yarnMscale(factor, mscale = 1) {
    checkPositive("factor", factor);
    checkPositive("mscale", mscale, 0);
    return factor <= 1 ? 1 : 0.1 * mscale * Math.log(factor) + 1;
  }

  // Pair index at which a pair completes `rotations` turns within the original context.
  function yarnPairIndex(rotations, dim, base, originalMaxLen) {
    return (dim * Math.log(originalMaxLen / (2 * Math.PI * rotations))) / (2 * Math.log(base));
  }

  // The clamped correction range [low, high] of yarn(); exported for the explorer's readout.
  function yarnRange(dim, base, originalMaxLen, betaFast, betaSlow, truncate) {
    let low = yarnPairIndex(betaFast, dim, base, originalMaxLen);
    let high = yarnPairIndex(betaSlow, dim, base, originalMaxLen);
    const raw = { low, high };
    if (truncate) {
      low = Math.floor(low);
      high = Math.ceil(high);
    }
    low = Math.max(low, 0);
    high = Math.min(high, dim - 1); // dim - 1, not dim/2 - 1: the deployed code clamps so
    if (high <= low) high = low + 0.001; // every pair kept past the turning point (see yarn())
    return { low, high, raw };
  }

  function yarn(dim, base = 10000, params = {}) {
    const { factor, original_max_len } = params;
    const betaFast = params.beta_fast ?? 32;
    const betaSlow = params.beta_slow ?? 1;
    const truncate = params.truncate ?? true;
    checkDim(dim);
    checkBase(base);
    checkFactor(factor);
    checkInt("original_max_len", original_max_len, 1);
    checkPositive("beta_fast", betaFast);
    checkPositive("beta_slow", betaSlow);
    if (betaFast < betaSlow) { // equal is a step, as in the package (Kimi K2 releases 1 and 1)
      throw new Error(`beta_fast must be >= beta_slow (32 and 1 in the paper), got beta_fast=${pyFloat(betaFast)}, beta_slow=${pyFloat(betaSlow)}`);
    }
    checkBool("truncate", truncate);
    let attention = params.attention_factor ?? null;
    attention = attention === null ? yarnMscale(factor) : checkPositive("attention_factor", attention);
    const { low, high } = yarnRange(dim, base, original_max_len, betaFast, betaSlow, truncate);
    const omega = invFreq(dim, base);
    const out = omega.map((w, i) => {
      const gamma = Math.min(Math.max((i - low) / (high - low), 0), 1); // 0: keep, 1: interpolate
      return (1 - gamma) * w + (gamma * w) / factor;
    });
    return { invFreq: out, attentionFactor: attention };
  }

  function llama3(dim, base = 500000, params = {}) {
    const factor = params.factor ?? 8;
    const low = params.low_freq_factor ?? 1;
    const high = params.high_freq_factor ?? 4;
    const originalMaxLen = params.original_max_len ?? 8192;
    checkFactor(factor);
    checkPositive("low_freq_factor", low);
    checkPositive("high_freq_factor", high);
    if (high < low) {
      throw new Error(`high_freq_factor must be >= low_freq_factor (4 and 1 in Llama 3.1), got high_freq_factor=${pyFloat(high)}, low_freq_factor=${pyFloat(low)}`);
    }
    checkInt("original_max_len", originalMaxLen, 1);
    const omega = invFreq(dim, base);
    const out = omega.map((w) => {
      const turns = (originalMaxLen * w) / (2 * Math.PI); // L / lambda_i
      if (turns < low) return w / factor; // slow band: interpolated
      if (high > low && turns <= high) {
        const sigma = (turns - low) / (high - low);
        return ((1 - sigma) * w) / factor + sigma * w;
      }
      return w; // fast band (and the edge when low == high): kept
    });
    return { invFreq: out, attentionFactor: 1 };
  }

  function longropeAttentionFactor(factor, originalMaxLen) {
    checkPositive("factor", factor);
    checkInt("original_max_len", originalMaxLen, 2);
    return factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(originalMaxLen));
  }

  function longrope(dim, base = 10000, params = {}) {
    checkDim(dim);
    checkBase(base);
    const short = checkFactorList("short_factor", params.short_factor, dim / 2);
    const long = checkFactorList("long_factor", params.long_factor, dim / 2);
    const originalMaxLen = checkInt("original_max_len", params.original_max_len, 2);
    const seqLen = checkInt("seq_len", params.seq_len);
    let factor = params.factor ?? null;
    if (factor === null) {
      if ((params.max_len ?? null) === null) {
        throw new Error(
          "longrope needs factor, or max_len to derive it as max_len / original_max_len " +
            "(HF: max_position_embeddings / original_max_position_embeddings)",
        );
      }
      checkInt("max_len", params.max_len, 1);
      factor = params.max_len / originalMaxLen;
      if (factor < 1) {
        throw new Error(
          `max_len=${params.max_len} must be >= original_max_len=${originalMaxLen} ` +
            `(the derived factor max_len / original_max_len is ${pyG(factor)} < 1)`,
        );
      }
    }
    checkFactor(factor);
    let attention = params.attention_factor ?? null;
    attention =
      attention === null
        ? longropeAttentionFactor(factor, originalMaxLen)
        : checkPositive("attention_factor", attention);
    const rescale = seqLen > originalMaxLen ? long : short;
    return { invFreq: invFreq(dim, base).map((w, i) => w / rescale[i]), attentionFactor: attention };
  }

  const METHODS = {
    none: (dim, base) => ({ invFreq: invFreq(dim, base), attentionFactor: 1 }),
    linear,
    ntk_aware: ntkAware,
    dynamic_ntk: dynamicNtk,
    yarn,
    llama3,
    longrope,
  };

  // The frequencies of `method` ("none" or a key of rope_scaling.SCALING_METHODS).
  function scaled(method, dim, base, params = {}) {
    const fn = METHODS[method];
    if (!fn) throw new Error(`method must be one of ${Object.keys(METHODS).join(", ")}, got ${show(method)}`);
    return fn(dim, base, params);
  }

  // --------------------------------------------------------------- RoPE quantities

  // rope_cos_sin at one position: a cos(m omega_i), a sin(m omega_i) for every pair.
  function cosSin(position, omega, attentionFactor = 1) {
    const cos = new Float64Array(omega.length);
    const sin = new Float64Array(omega.length);
    for (let i = 0; i < omega.length; i++) {
      const angle = position * omega[i];
      cos[i] = Math.cos(angle);
      sin[i] = Math.sin(angle);
      if (attentionFactor !== 1) {
        cos[i] *= attentionFactor;
        sin[i] *= attentionFactor;
      }
    }
    return { cos, sin };
  }

  // plots.rope_decay_bound: the mean over l of |S_l|, S_l = sum_{i<l} exp(j k omega_i), at each
  // relative distance k.
  function decayBound(distances, omega) {
    return Array.from(distances, (k) => {
      let re = 0;
      let im = 0;
      let total = 0;
      for (let i = 0; i < omega.length; i++) {
        const angle = k * omega[i];
        re += Math.cos(angle);
        im += Math.sin(angle);
        total += Math.hypot(re, im);
      }
      return total / omega.length;
    });
  }

  // The score of a query and a key that are both (1, 0) in every pair, divided by the number of
  // pairs N: (1/N) sum_i cos(k omega_i). For any random Gaussian vector it is also the expected
  // score of a key equal to its query, relative to distance 0. |it| <= decayBound(k).
  function selfScore(distances, omega) {
    return Array.from(distances, (k) => {
      let total = 0;
      for (let i = 0; i < omega.length; i++) total += Math.cos(k * omega[i]);
      return total / omega.length;
    });
  }

  // Pairs that complete at least one full turn within `length` positions (zoo_rows' full_turns).
  function fullTurns(omega, length) {
    return omega.filter((w) => (length * w) / (2 * Math.PI) >= 1).length;
  }

  const api = {
    invFreq,
    linear,
    ntkAware,
    dynamicNtk,
    yarnMscale,
    yarnRange,
    yarn,
    llama3,
    longropeAttentionFactor,
    longrope,
    METHODS: Object.keys(METHODS),
    scaled,
    cosSin,
    decayBound,
    selfScore,
    fullTurns,
    checkInt,
    checkRotaryDim,
    pyFloat,
    pyG,
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.posencRef = api;
})(typeof self !== "undefined" ? self : this);
