.target amx
.output 0 @64 u8[3]
.const @64 9cfe1f
