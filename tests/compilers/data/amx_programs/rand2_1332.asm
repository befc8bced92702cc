.target amx
.output 0 @64 u8[2,4]
.const @64 e0f8c457e08002a5
