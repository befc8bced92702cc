.target amx
.input 0 @64 u8[2]
.output 0 @128 f32[1]
.const @128 00000000
