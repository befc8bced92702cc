.target amx
.output 0 @64 f32[1,1,1]
.const @64 00000080
