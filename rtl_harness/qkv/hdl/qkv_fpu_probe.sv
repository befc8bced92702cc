// qkv_fpu_probe: the QKV datapath's floating-point units side by side, for unit tests only
// (tests/rtl_harness/test_qkv_units.py drives it through qkv_fpu_probe_shim.cpp): the f32 FMA of
// the gemm lanes, the bf16 add of the softmax row sum, the bf16 divider and the bf16 exp.
module qkv_fpu_probe (
  input  logic [15:0] a,
  input  logic [15:0] b,
  input  logic [31:0] c,
  output logic [31:0] fma_r,
  output logic [15:0] add_y,
  output logic [15:0] div_y,
  output logic [15:0] exp_y
);
  qkv_fma      u_fma (.a(a), .b(b), .c(c), .r(fma_r));
  qkv_bf16_add u_add (.a(a), .b(b), .y(add_y));
  qkv_bf16_div u_div (.a(a), .b(b), .y(div_y));
  qkv_bf16_exp u_exp (.x(a), .y(exp_y));
endmodule
